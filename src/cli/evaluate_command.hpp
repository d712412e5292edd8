// `openkernel evaluate`'s engine half, shared with the Python API (src/pyapi): the checks before a
// worker is started (prepare_evaluation) and one evaluation on a started engine, recorded in its
// store (evaluate_recorded), whose JSON is what `evaluate --json` prints. The CLI adds the printing
// and the exit codes. Not thread-safe: one evaluation at a time per Engine.
#pragma once

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/context.hpp"
#include "eval/limits.hpp"

namespace ok::cli {

struct EvaluateOptions {
  ProblemOptions problem;
  std::string candidate;
  std::string backend;
  std::string device;
  eval::Limits limits;
  long long seed = -1;
  bool strict = false;
  std::string cuda_graph = "auto";
  std::string rested = "auto";
  bool compile_baseline = false;
  std::string profile = "basic";  // profiling tier: basic, proton, deep
  bool json = false;
  std::string python;
  std::string eval_host;  // --eval-host (docs/remote.md)
};

// The problem, with the candidate's path and the limits checked (kUsage, kBadInput).
util::Result<ResolvedProblem> prepare_evaluation(const EvaluateOptions& o,
                                                 const config::Config& cfg);

// How one evaluation runs on a long-lived engine: `cancel` (may be null) abandons it (kCancelled,
// the worker stopped); `spare`: more follow, so the worker starts the next candidate process now.
struct EvaluationControl {
  const std::atomic<bool>* cancel = nullptr;
  bool spare = false;
};

// Evaluates o.candidate against `problem` on the engine's worker and backend, records it in the
// engine's store and returns `evaluate --json`'s object (sources left out, evaluation_id and db
// added).
util::Result<nlohmann::json> evaluate_recorded(Engine& engine, const EvaluateOptions& o,
                                               const ResolvedProblem& problem,
                                               const EvaluationControl& control = {});

}  // namespace ok::cli
