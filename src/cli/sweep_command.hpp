// `openkernel sweep`'s run, shared with the Python API (src/pyapi): the flags' options, the sweep
// itself (sweep_session) and its JSON summary (what `sweep --json` prints). The CLI adds the
// printing and the exit codes (sweep_command.cpp). One sweep per output at a time.
#pragma once

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/context.hpp"
#include "eval/limits.hpp"
#include "sweep/sweep.hpp"

namespace ok::cli {

struct SweepCliOptions {
  int level = 0;
  std::string problems;
  std::string kernelbench_dir;
  std::string backend, model, base_url, mode = "fast";
  int iterations = 0;
  double budget_usd = 0;
  std::string output;
  std::string executor = "local";
  std::string gpus;
  int jobs = 0;
  std::vector<std::string> slurm_args;
  std::vector<std::string> eval_hosts;  // --eval-host, repeatable (docs/remote.md)
  std::string python;
  long long seed = 1;
  eval::Limits limits;
  int prompt_budget_tokens = 0;       // 0: optimize's default
  std::optional<double> stop_at_sol;  // unset: optimize's default
  bool no_skills = false;
  bool json = false;
};

// What a front end plugs into a sweep; the defaults are the CLI's.
struct SweepHooks {
  // Stops the sweep as Ctrl-C does; null: util::cancel_flag(), with util's SIGINT handler.
  const std::atomic<bool>* cancel = nullptr;
  // Told the sweep's progress; empty: the CLI's lines on stderr.
  sweep::Observer observer;
  // The openkernel executable each problem's optimize runs; empty: this process's.
  std::filesystem::path binary;
};

struct SweepDone {
  sweep::Options options;
  sweep::Outcome outcome;
  double wall_s = 0;
};

// Checks the flags, plans the tasks and runs them: kUsage and kBadInput for bad flags or problems;
// an interrupted sweep is a SweepDone whose outcome says so.
util::Result<SweepDone> sweep_session(const GlobalOptions& g, const SweepCliOptions& c,
                                      const SweepHooks& hooks);

// `sweep --json`'s summary: output, work_dir, db, planned, skipped, ran, failed, interrupted,
// wall_s and, when there are rows, score (`score --json`'s keys).
nlohmann::json sweep_summary_json(const SweepDone& done);

}  // namespace ok::cli
