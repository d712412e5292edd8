// One `openkernel optimize` session: the orchestrator of the three-level search (docs/search.md).
//
// The search's Planner (src/search: the intent-tree world model, under a strategy chosen from the
// evolving population) says what to try; the Generator writes candidates for it, several in
// flight on their own threads (`in_flight`), while the Worker evaluates them one at a time in
// issue order (the device's queue) and the Critic diagnoses each. Every evaluation is recorded
// with its attempt in the store at once and the intent tree checkpointed after it, so a crash or
// kill -9 loses at most the evaluations in flight. Proposal n is issued once results 1..n-K are
// known (K = in_flight), so the search is deterministic given the seed and the model's replies,
// and a resumed session rebuilds the planner by replaying its recorded attempts.
//
// Stops on the iteration limit, the USD / wall-time / device-time budgets, an exhausted
// generator, Ctrl-C, a stop asked through Control, or a correct candidate within 5% of speed of
// light; a Control's pause holds new generations back. Paid work is never
// thrown away: generations already paid for are evaluated after a USD or iteration stop, and kept
// as not_evaluated attempts after a time budget stops the device.
//
// The session's own thread drives it and tells the observer each event (observer.hpp); one session
// per Worker.
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

#include "eval/limits.hpp"
#include "eval/worker.hpp"
#include "llm/accounting.hpp"
#include "optimize/agents.hpp"
#include "optimize/control.hpp"
#include "optimize/observer.hpp"
#include "store/store.hpp"

namespace ok::optimize {

// The default fraction of speed of light at which the loop stops: nothing left worth trying.
inline constexpr double kSpeedOfLightStop = 0.95;

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
  eval::Limits limits;  // stored flat: trials, timeout_s, timing_budget_s, threads, no_sandbox
  std::string search = "engine";  // engine, best-of-n, prior (search/world_model.hpp)
  int in_flight = 0;              // generations in flight; 0: the mode's default
  std::optional<double> budget_wall_s, budget_device_s;
  std::string strategy;  // a strategy id to use instead of the population's choice
  // Stop once a correct kernel reaches this fraction of speed of light (>= 1: never; landscape
  // measurements keep going to see every point).
  double stop_at_sol = kSpeedOfLightStop;
  bool compile_baseline = true;  // time torch.compile(reference) once, on the GPU
  // Pre-builds of load_inline candidates in a GPU-less build worker (docs/search.md): off (the
  // default: opt-in until measured on the GPU machine), auto (on a GPU backend), on.
  std::string prebuild = "off";
  // The generator prompt's memory budget in tokens (PromptBudgets::total); 0: the default.
  int prompt_budget_tokens = 0;
  // The skill library (docs/skills.md): retrieve skills at the start and learn from the session at
  // its end. false (--no-skills): neither, for ablations.
  bool skills = true;

  nlohmann::json to_json() const;
  static Options from_json(const nlohmann::json& j);
};

// The iterations a mode allows when --iterations is not given.
int default_iterations(const std::string& mode);
// The generations a mode keeps in flight when --in-flight is not given: 1 for the builtin
// generator (it answers at once); for a model 2 (fast) or 4 (deep).
int default_in_flight(const std::string& mode, bool builtin);

struct Outcome {
  std::string session;
  std::string status;  // finished, interrupted, stopped (Control::request_stop), failed
  // iterations, budget, wall_time, device_time, exhausted, unsupported, speed_of_light,
  // interrupted, stopped, error
  std::string stop_reason;
  std::vector<Attempt> attempts;
  std::optional<size_t> best;  // index into attempts
  std::optional<double> compile_runtime_us, eager_runtime_us;
  std::optional<double> compile_runtime_stderr_us;  // the torch.compile time's standard error
  double cost_usd = 0;
  std::filesystem::path best_path;  // OUT/best_<name>.py when a correct candidate exists
  nlohmann::json device;
  std::string error;  // why the session failed, when it did
  // The search: policy, strategy, problem class, in_flight, device_busy_s, wall_s,
  // device_busy_fraction, evaluations, evaluations_to_best, decisions, and the intent tree;
  // `prebuild` (PreBuilder::summary) when pre-builds ran; `skills` (the skills fed, each with its
  // outcome once the session finished, and the skill learnt: docs/skills.md).
  nlohmann::json search = nlohmann::json::object();
};

struct Dependencies {
  eval::Worker* worker = nullptr;
  std::function<util::Result<eval::Worker>()> restart_worker;  // after a worker crash
  store::Store* store = nullptr;
  Generator* generator = nullptr;
  Critic* critic = nullptr;
  llm::Ledger* ledger = nullptr;  // LLM spending (null for builtin)
  const std::atomic<bool>* cancel = nullptr;
  Observer* observer = nullptr;  // told every event (observer.hpp); null: nobody listens
  Control* control = nullptr;    // pause and graceful stop from another thread (control.hpp)
  std::string cache_dir;
  // Pre-builds (docs/search.md, "Pre-builds"): build workers for this many slots, 0 for none.
  std::function<util::Result<eval::Worker>()> start_build_worker;
  int prebuild_slots = 0;
};

// Gathers what the agents need from the worker: the graph, the inspection, the device. When
// `cancel` becomes true meanwhile, the worker is stopped and the result is kCancelled.
util::Result<ProblemContext> prepare_problem(eval::Worker& worker, const Options& o,
                                             const std::atomic<bool>* cancel = nullptr);

// Runs (or, with a non-empty `resumed`, continues) session `id`. The session row must exist.
util::Result<Outcome> run_session(const std::string& id, const Options& o, ProblemContext problem,
                                  std::vector<Attempt> resumed, Dependencies deps);

// The store's row of an attempt of `session` (attempts_from_rows reads it back).
store::AttemptRow attempt_row(const std::string& session, const Attempt& a,
                              std::optional<int64_t> candidate_id);
// Attempts as the store recorded them (for --resume), each evaluated one with its evaluation's
// summary (flags, eager time, roofline) read back from the store, so a resumed session reports its
// earlier best exactly as the first run would have.
std::vector<Attempt> attempts_from_rows(const std::vector<store::AttemptRow>& rows,
                                        store::Store* store = nullptr);

// What attempt `a` taught the search (its point in `space` when it is a template point); used
// live and to replay recorded attempts.
search::Observation observation_of(const Attempt& a, const search::TemplateSpace& space);

// The store row of a new session `id` started with `o` (status running, no best yet).
store::SessionRow new_session_row(const std::string& id, const Options& o);

// A new session id: s<UTC yyyymmdd-hhmmss>-<4 random hex>.
std::string new_session_id();

}  // namespace ok::optimize
