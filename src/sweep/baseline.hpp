// `openkernel baseline`: the reference's eager and torch.compile times for each problem, measured
// by the evaluation worker on this device (docs/evaluation.md's method) and stored in the table
// `baselines` under the problem, device and backend, so later sweeps and reports compare within one
// machine. docs/sweep.md describes the command and its rows.
//
// The caller owns the worker and the store and resolves the backend and threads; a worker that
// dies is replaced through `restart`. Not thread-safe: one worker request at a time.
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/limits.hpp"
#include "eval/worker.hpp"
#include "problems/kernelbench.hpp"
#include "store/store.hpp"
#include "util/error.hpp"

namespace ok::sweep {

struct BaselineOptions {
  std::string backend;  // cpu, triton or cuda (resolved)
  double timing_budget_s = eval::Limits{}.timing_budget_s;
  int threads = 0;  // resolved: 0 is torch's default
  std::string cuda_graph = "auto", rested = "auto";
  bool compile = true;  // also time torch.compile
};

struct BaselineOutcome {
  // One object per problem, in order: level, problem_id, name, then eager_us, compile_us, method,
  // device, compile_reason, or error.
  nlohmann::json rows = nlohmann::json::array();
  int failed = 0;
  bool interrupted = false;  // `cancel` was set: the problems after the last row were not timed
};

// A fresh worker, to replace one that died.
using StartWorker = std::function<util::Result<eval::Worker>()>;
// Each row as soon as it is measured (or failed).
using BaselineObserver =
    std::function<void(const problems::ProblemRef& p, const nlohmann::json& row)>;

// Times and stores each problem in turn until all are done or `cancel` is set. A problem whose
// measurement fails gets a row with its error and the loop goes on; a store error or a worker
// that cannot be restarted ends it with that error.
util::Result<BaselineOutcome> run_baseline(const std::vector<problems::ProblemRef>& problems,
                                           const BaselineOptions& o, eval::Worker& worker,
                                           const StartWorker& restart, store::Store& store,
                                           const std::atomic<bool>* cancel,
                                           const BaselineObserver& observer);

}  // namespace ok::sweep
