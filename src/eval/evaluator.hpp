// Evaluating one candidate against one reference through a Worker, and rendering the verdict.
//
// The result is the worker's JSON object (docs/evaluation.md lists its keys), completed with the
// engine's own wall time. Stateless; safe to call from one thread per Worker.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "eval/limits.hpp"
#include "eval/worker.hpp"

namespace ok::eval {

struct EvalRequest {
  std::string reference;
  std::string candidate;
  std::string backend = "cpu";
  std::optional<std::string> device;
  Limits limits;  // no_sandbox is sent only when true
  std::optional<long long> seed;
  std::map<std::string, std::string> overrides;
  bool strict = false;
  std::string cache_dir;
  std::string cuda_graph = "auto";  // CUDA-graph timing: auto, on, off (sent unless auto)
  std::string rested = "auto";      // rested timing (idle gap per call): auto, on, off (ditto)
  bool compile_baseline = false;    // also time torch.compile(reference) (sent only when true)
  // More evaluations follow on this worker: it starts the next candidate process ahead of time
  // (sent only when true; docs/evaluation.md, "Throughput").
  bool spare = false;
  // The profiling tier after a correct evaluation: basic, proton or deep (sent unless basic;
  // src/profile/profile.hpp, docs/profiling.md).
  std::string profile = "basic";
};

nlohmann::json to_json(const EvalRequest& r);
// `cancel`: see Worker::call.
util::Result<nlohmann::json> evaluate(Worker& worker, const EvalRequest& request,
                                      const std::atomic<bool>* cancel = nullptr);
// The profiling tier `request.profile` (proton or deep; basic asks for deep) of a candidate the
// caller already evaluated correct, without evaluating it again (the worker's `profile` op,
// docs/worker-protocol.md): the keys the tier adds to an evaluation's `profile` (tier, flags,
// kernel_metrics, ...: docs/profiling.md). A profiler's limit is a flag in it, not an error.
util::Result<nlohmann::json> profile_candidate(Worker& worker, const EvalRequest& request,
                                               const std::atomic<bool>* cancel = nullptr);
// The short human report printed without --json.
std::string format_report(const nlohmann::json& result);

}  // namespace ok::eval
