// Shared set-up for engine commands: config, the worker, the store and problem resolution.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "config/config.hpp"
#include "eval/limits.hpp"
#include "eval/worker.hpp"
#include "store/store.hpp"

namespace ok::cli {

struct ProblemOptions {
  std::string reference;  // --reference PATH
  int level = 0;          // --level L
  int problem = 0;        // --problem N
  std::string kernelbench_dir;
  std::vector<std::string> sets;  // --set NAME=VALUE
};

// Adds --reference/--level/--problem/--kernelbench-dir/--set to a subcommand.
void add_problem_options(CLI::App* cmd, ProblemOptions& p);

struct ResolvedProblem {
  std::string path;
  std::string name;
  std::optional<int> level, number;
  std::map<std::string, std::string> overrides;
};

// Which of the evaluation limit flags a command takes.
struct LimitFlags {
  bool trials = true, timeout = true, timing_budget = true, threads = true, no_sandbox = true;
};
// Declares --trials, --timeout, --timing-budget, --threads and --no-sandbox (those `which` names)
// into `limits`: one help text per flag and eval::Limits' defaults, for every command.
void add_limit_options(CLI::App* cmd, eval::Limits& limits, LimitFlags which = {});
// kUsage when a limit is out of range: --trials below 1, --timeout not above 0.
util::Result<void> check_limits(const eval::Limits& limits);
// kUsage when --prompt-budget-tokens (optimize and sweep) is set below
// optimize::kMinPromptBudgetTokens; 0 stands for the default.
util::Result<void> check_prompt_budget_tokens(int tokens);

// Declares --python: the interpreter with torch that runs the evaluation worker(s).
void add_python_option(CLI::App* cmd, std::string& python);

// Declares --eval-host ssh://[user@]host[:port]: run the evaluation worker(s) there over ssh
// (docs/remote.md); with it --python names the host's interpreter.
void add_eval_host_option(CLI::App* cmd, std::string& eval_host);

// Declares --backend (cpu, cuda or triton) into `backend`; `help` says what its default is.
void add_backend_option(CLI::App* cmd, std::string& backend, const std::string& help);

// Declares --cuda-graph and --rested (auto, on, off: docs/evaluation.md) into `cuda_graph` and
// `rested`, for the commands that time on a GPU.
void add_timing_mode_options(CLI::App* cmd, std::string& cuda_graph, std::string& rested);

// What a command that measures needs: the store, a started worker and the backend to run.
struct Engine {
  store::Store store;
  eval::Worker worker;
  std::string backend;
};
// Opens the store, starts the worker (`python_flag`) and chooses the backend (`requested`, else
// `gpu_default` with a GPU and cpu without), failing on the first that cannot be had.
// `eval_host` and `worker_env`: as start_worker's `eval_host` and `env`.
util::Result<Engine> start_engine(const GlobalOptions& g, const config::Config& cfg,
                                  const std::string& python_flag, const std::string& requested,
                                  const std::string& gpu_default, const std::string& eval_host = "",
                                  const std::map<std::string, std::string>& worker_env = {});

// The KernelBench folder: --kernelbench-dir (`flag`), else $OPENKERNEL_KERNELBENCH_DIR, else the
// config's kernelbench_dir.
util::Result<std::filesystem::path> kernelbench_dir(const std::string& flag,
                                                    const config::Config& cfg);
util::Result<ResolvedProblem> resolve_problem(const ProblemOptions& p, const config::Config& cfg);
util::Result<std::map<std::string, std::string>> parse_sets(const std::vector<std::string>& sets);
// `env`: added to the worker's environment (the build worker's). `eval_host` (--eval-host, else
// the config's eval_host): the worker runs on that host over ssh or in a SLURM allocation,
// `python_flag` (default python3) being the host's interpreter; OPENKERNEL_PYTHON and the config's
// python name local ones. `cancel`: stops a worker that is still starting (kCancelled;
// eval::WorkerOptions::cancel).
util::Result<eval::Worker> start_worker(const config::Config& cfg, const std::string& python_flag,
                                        const std::map<std::string, std::string>& env = {},
                                        const std::string& eval_host = "",
                                        const std::atomic<bool>* cancel = nullptr);
// The store's path: --db, else $OPENKERNEL_DB, else the config's db, else the default.
std::filesystem::path store_path(const GlobalOptions& g, const config::Config& cfg);
util::Result<store::Store> open_store(const GlobalOptions& g, const config::Config& cfg);

// The backend to run: `requested`, else `gpu_default` when the worker sees a GPU and cpu when it
// does not. kEnvironment when a GPU backend is asked for and the worker's torch sees no GPU.
util::Result<std::string> choose_backend(const eval::Worker& worker, const std::string& requested,
                                         const std::string& gpu_default);
// CPU threads for reference and candidate: `requested` when positive, else on the CPU backend the
// machine's cores (at most 8), on a GPU backend 0 (torch's default).
int threads_for(const std::string& backend, int requested);

}  // namespace ok::cli
