// One `openkernel optimize` session: the inner generate -> evaluate -> diagnose -> retry loop.
//
// The loop asks the Generator for a candidate, writes it under OUT/attempts/, evaluates it through
// the Worker, records the evaluation and the attempt in the store at once (so a crash or kill -9
// loses at most the evaluation in flight), asks the Critic for a diagnosis that the next
// generation reads, and stops on the iteration limit, the USD budget, an exhausted generator,
// Ctrl-C, or a correct candidate within 5% of speed of light. A resumed session replays its
// recorded attempts into the history and continues with the next number.
//
// Not thread-safe; one session per Worker.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "eval/worker.hpp"
#include "llm/accounting.hpp"
#include "optimize/agents.hpp"
#include "store/store.hpp"

namespace ok::optimize {

struct Options {
  std::string reference;  // absolute path
  std::string name;
  std::optional<int> level, number;
  std::map<std::string, std::string> overrides;
  std::string backend;  // cpu, triton, cuda
  std::string model;    // builtin or a registry name
  std::string base_url;
  std::string mode = "fast";
  int iterations = 0;  // 0: the mode's default
  std::optional<double> budget_usd;
  std::filesystem::path out_dir;  // the session's own folder
  uint64_t seed = 0;
  int threads = 0;
  double timeout_s = 300;
  int trials = 5;
  double timing_budget_s = 4;
  bool no_sandbox = false;

  nlohmann::json to_json() const;
  static Options from_json(const nlohmann::json& j);
};

// The iterations a mode allows when --iterations is not given.
int default_iterations(const std::string& mode);
// The fraction of speed of light at which the loop stops: nothing left worth trying.
inline constexpr double kSpeedOfLightStop = 0.95;

// What the loop tells its observer (the CLI prints it; the UIs will draw it).
struct Event {
  std::string kind;  // started, generating, evaluating, attempt, stopped
  int number = 0, total = 0;
  std::string text;
  const Attempt* attempt = nullptr;
  std::optional<double> best_speedup;
  double cost_usd = 0;
};
using Observer = std::function<void(const Event&)>;

struct Outcome {
  std::string session;
  std::string status;       // finished, interrupted, failed
  std::string stop_reason;  // iterations, budget, exhausted, speed_of_light, interrupted, error
  std::vector<Attempt> attempts;
  std::optional<size_t> best;  // index into attempts
  std::optional<double> compile_runtime_us, eager_runtime_us;
  double cost_usd = 0;
  std::filesystem::path best_path;  // OUT/best_<name>.py when a correct candidate exists
  nlohmann::json device;
  std::string error;  // why the session failed, when it did
};

struct Dependencies {
  eval::Worker* worker = nullptr;
  std::function<util::Result<eval::Worker>()> restart_worker;  // after a worker crash
  store::Store* store = nullptr;
  Generator* generator = nullptr;
  Critic* critic = nullptr;
  llm::Ledger* ledger = nullptr;  // LLM spending (null for builtin)
  const std::atomic<bool>* cancel = nullptr;
  Observer observer;
  std::string cache_dir;
};

// Gathers what the agents need from the worker: the graph, the inspection, the device.
util::Result<ProblemContext> prepare_problem(eval::Worker& worker, const Options& o);

// Runs (or, with a non-empty `resumed`, continues) session `id`. The session row must exist.
util::Result<Outcome> run_session(const std::string& id, const Options& o, ProblemContext problem,
                                  std::vector<Attempt> resumed, Dependencies deps);

// Attempts as the store recorded them (for --resume), each evaluated one with its evaluation's
// summary (flags, eager time, roofline) read back from the store, so a resumed session reports its
// earlier best exactly as the first run would have.
std::vector<Attempt> attempts_from_rows(const std::vector<store::AttemptRow>& rows,
                                        store::Store* store = nullptr);

// The store row of a new session `id` started with `o` (status running, no best yet).
store::SessionRow new_session_row(const std::string& id, const Options& o);

// A new session id: s<UTC yyyymmdd-hhmmss>-<4 random hex>.
std::string new_session_id();

}  // namespace ok::optimize
