// `openkernel sweep`: one `openkernel optimize` per KernelBench problem, run by an executor (local
// slots, one per GPU, or a SLURM job array; sweep/executor.hpp holds the driver they share),
// gathered into one results TSV (docs/tsv.md) and one store. docs/sweep.md describes the folder
// layout, resume and the executors.
//
// Every problem is a task with its own folder under the sweep's work folder (results/X.tsv ->
// results/X/L1_019_ReLU/): the optimize run's attempts, best kernel and report.json live there,
// with `session` (the optimize session's id) and `error.json` (why the run ended without a
// report). A task is done when its report.json says the session finished; re-running the same
// sweep skips done tasks and resumes the others' recorded sessions, so an interruption (Ctrl-C,
// kill, node failure) loses at most the evaluations in flight. The TSV is rewritten from the task
// folders after every task, atomically, so it always holds one row per problem.
//
// Not thread-safe; one sweep per work folder at a time (a lock file enforces it).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/limits.hpp"
#include "score/tsv.hpp"
#include "util/error.hpp"

namespace ok::sweep {

// Parses a problem selection such as "1-20,35": numbers and inclusive ranges, comma-separated,
// returned sorted without repeats. kUsage on anything else (empty items, reversed ranges, zero).
util::Result<std::vector<int>> parse_selection(std::string_view text);

struct Options {
  int level = 0;
  std::vector<int> problems;  // empty: every problem of the level
  std::filesystem::path kernelbench_dir;
  std::string backend;  // cpu, triton, cuda (resolved before the sweep starts)
  std::string model;    // builtin or a registry name
  std::string base_url;
  std::string mode = "fast";
  int iterations = 0;                   // per problem; 0: the mode's default
  std::optional<double> budget_usd;     // per problem
  std::filesystem::path output;         // the results TSV
  std::string executor = "local";       // local or slurm
  std::vector<std::string> gpus;        // one slot per entry (CUDA_VISIBLE_DEVICES); may repeat
  int jobs = 1;                         // local slots when gpus is empty
  std::vector<std::string> slurm_args;  // extra sbatch arguments
  // Passed through to every optimize run.
  std::filesystem::path binary;  // this openkernel executable
  std::filesystem::path db;      // the sweep's store
  std::string python;
  uint64_t seed = 1;
  eval::Limits limits;
  // Local executor: its slots on each of these hosts (--eval-host, passed to their optimize runs;
  // docs/remote.md): hosts x gpus, or one slot per entry without gpus (a host may repeat).
  std::vector<std::string> eval_hosts;
  // For new sessions only (a resumed one keeps its own): false gives --no-skills; above 0,
  // --prompt-budget-tokens; set, --stop-at-sol.
  bool skills = true;
  int prompt_budget_tokens = 0;
  std::optional<double> stop_at_sol;  // --stop-at-sol (unset: optimize's default)
};

// The work folder of a results file: results/X.tsv -> results/X.
std::filesystem::path work_dir(const std::filesystem::path& output);

struct Task {
  int level = 0, number = 0;
  std::string name;
  std::filesystem::path reference;
  std::filesystem::path dir;  // WORK/L<level>_<number:03>_<name>
  std::string session;        // recorded in dir/session once started
};

// What a task's folder says about it.
enum class TaskState { kNew, kStarted, kDone };
TaskState task_state(const Task& t);

// The TSV row of a task from its report.json (or error.json); nullopt when it has neither.
std::optional<score::Row> task_row(const Task& t);

// Every task row found in the work folder (all levels, all selections run into it), sorted by
// level and problem, rendered as the TSV and written to `output` atomically.
util::Result<std::vector<score::Row>> write_results(const std::filesystem::path& output);

// The optimize command line of a task. `resume`: continue its recorded session; `db` the store it
// writes (the sweep's, or the task's own under SLURM).
std::vector<std::string> task_command(const Options& o, const Task& t, bool resume,
                                      const std::filesystem::path& db);

// Progress as the sweep runs, for the CLI to print.
struct Progress {
  std::string kind;  // planned, started, finished, failed, warning, stopped
  const Task* task = nullptr;
  std::optional<score::Row> row;
  std::string slot;  // GPU id or "cpu"
  std::string text;
  int done = 0, total = 0, running = 0;
  int fast_1 = 0, scored = 0;  // correct and faster than eager, among finished rows
  double eta_s = -1;           // < 0: unknown
  double wall_s = 0;           // of the task that finished
};
using Observer = std::function<void(const Progress&)>;

struct Outcome {
  int planned = 0, skipped = 0, ran = 0, failed = 0;
  bool interrupted = false;
  std::vector<score::Row> rows;  // the TSV as last written
};

// Resolves the selection against the KernelBench folder into tasks (kBadInput for a problem
// number the level lacks), creating the work folder.
util::Result<std::vector<Task>> plan(const Options& o);

// Runs the tasks that are not done with the executor `o.executor` names (sweep/executor.hpp):
// "local", one `openkernel optimize` child per slot at a time; "slurm", one SLURM job array whose
// tasks each write their own store in their folder, merged into the sweep's once it is over. Ends
// when every task has run once or `cancel` is set (running tasks get SIGINT and keep their
// sessions resumable). kUsage for another executor name, for a sweep already running into the same
// output, or for an output an earlier sweep with another backend or model wrote.
util::Result<Outcome> run(const Options& o, std::vector<Task> tasks,
                          const std::atomic<bool>* cancel, const Observer& observer);

}  // namespace ok::sweep
