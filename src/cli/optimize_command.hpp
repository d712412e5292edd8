// The `optimize` front end, reusable: `openkernel optimize` and `kernel-code optimize` take the
// same flags (add_optimize_flags) and run the same engine (run_optimize); they differ only in what
// they plug into the run (FrontEnd): the CLI its progress printer on stderr and the report on
// stdout, the terminal UI its model of the run, a Control for the p and s keys, and silence.
//
// run_optimize resolves the problem, the backend and the model, opens (or resumes) a session,
// runs src/optimize's loop on the calling thread and writes the best kernel and the reports.
// Every event goes to `FrontEnd::observer` and to the store's events table. Exit codes: 0 the
// session ran (whether or not a correct kernel was found; also after a stop through the
// Control), 1 internal error, 2 bad usage or input, 130 interrupted (util::cancel_flag() set, by
// Ctrl-C or by the caller: the best so far is kept and the session can be resumed). Errors are
// printed on stderr (report_error) even when quiet.
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.hpp"
#include "cli/context.hpp"
#include "cli/llm_commands.hpp"
#include "eval/limits.hpp"
#include "optimize/control.hpp"
#include "optimize/observer.hpp"
#include "optimize/session.hpp"

namespace ok::cli {

struct OptimizeOptions {
  ProblemOptions problem;
  LlmOptions llm;
  std::string backend;
  std::string mode = "fast";
  int iterations = 0;
  std::string out;
  std::string resume;
  std::string session_id;
  bool json = false;
  std::string python;
  std::string eval_host;  // --eval-host (docs/remote.md)
  long long seed = -1;
  eval::Limits limits;
  std::string search = "engine";
  int in_flight = 0;
  double budget_wall_s = 0, budget_device_s = 0;
  std::string strategy;
  double stop_at_sol = optimize::kSpeedOfLightStop;
  bool no_compile_baseline = false;
  std::string prebuild;  // auto, on, off; empty: off (a resume keeps the session's)
  // The model prompt's memory budget in tokens; 0: the default (optimize::PromptBudgets).
  int prompt_budget_tokens = 0;
  bool no_skills = false;  // neither retrieve nor learn skills (a resume keeps the session's)
};

// Declares every `optimize` flag on `cmd` (`--db` into g.db). `--json` is declared too: a front
// end that cannot honour it refuses it after parsing.
void add_optimize_flags(CLI::App* cmd, OptimizeOptions& o, GlobalOptions& g);

// What a front end plugs into a run. Borrowed: each must outlive run_optimize.
struct FrontEnd {
  optimize::Observer* observer = nullptr;  // told every event, besides the store's StoreObserver
  optimize::Control* control = nullptr;    // pause and graceful stop from another thread
  // Print nothing on stderr but errors: notes are dropped, warnings go to `observer`.
  bool quiet = false;
  bool print_report = true;  // the report (or, with --json, its JSON line) on stdout at the end
  // Called once the session's id is known, before the session starts (from the calling thread).
  std::function<void(const std::string& session)> on_session;
  // Install util's SIGINT handler (Ctrl-C sets util::cancel_flag(), a second one kills). False
  // for a front end that handles its signals itself (the terminal UI restores the terminal
  // first) and sets util::cancel_flag() on Ctrl-C.
  bool handle_interrupt = true;
  // What stops the session as Ctrl-C does (status interrupted, resumable); null:
  // util::cancel_flag(). The Python API passes a flag of its own per call.
  const std::atomic<bool>* cancel = nullptr;
};

// `openkernel optimize`'s whole run; returns its exit code (above).
int run_optimize(const GlobalOptions& g, const OptimizeOptions& o, const FrontEnd& fe);

// The same run without its printing at the end: the report (report.json's object) and the
// session's status (finished, interrupted, stopped), or the error run_optimize would print.
struct OptimizeRun {
  nlohmann::json report;
  std::string status;
  std::string session;
};
util::Result<OptimizeRun> optimize_session(const GlobalOptions& g, const OptimizeOptions& o,
                                           const FrontEnd& fe);

}  // namespace ok::cli
