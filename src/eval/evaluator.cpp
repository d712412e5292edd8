#include "eval/evaluator.hpp"

#include <fmt/core.h>

#include <chrono>

#include "profile/profile.hpp"

namespace ok::eval {

using nlohmann::json;

json to_json(const EvalRequest& r) {
  json j = {{"op", "evaluate"},
            {"reference", r.reference},
            {"candidate", r.candidate},
            {"backend", r.backend},
            {"trials", r.limits.trials},
            {"timeout_s", r.limits.timeout_s},
            {"overrides", r.overrides},
            {"timing_budget_s", r.limits.timing_budget_s},
            {"threads", r.limits.threads},
            {"strict", r.strict}};
  if (r.device) j["device"] = *r.device;
  if (r.seed) j["seed"] = *r.seed;
  if (!r.cache_dir.empty()) j["cache_dir"] = r.cache_dir;
  if (r.limits.no_sandbox) j["no_sandbox"] = true;
  if (r.cuda_graph != "auto") j["cuda_graph"] = r.cuda_graph;
  if (r.rested != "auto") j["rested"] = r.rested;
  if (r.compile_baseline) j["compile_baseline"] = true;
  if (r.spare) j["spare"] = true;
  if (r.profile != "basic") j["profile"] = r.profile;
  return j;
}

util::Result<json> evaluate(Worker& worker, const EvalRequest& request,
                            const std::atomic<bool>* cancel) {
  auto start = std::chrono::steady_clock::now();
  // Each candidate step is bounded by timeout_s inside the worker; the worker itself gets room
  // for the compile, every trial, timing and the reference's own runs.
  auto limit = std::chrono::seconds(
      static_cast<long long>(request.limits.timeout_s * (request.limits.trials + 6) +
                             request.limits.timing_budget_s * 3 + 600 +
                             // a profiling tier: the profiled run and reading its report
                             (request.profile != "basic" ? 2 * request.limits.timeout_s : 0)));
  auto r = worker.call(to_json(request), limit, cancel);
  if (!r) return r;
  (*r)["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

util::Result<json> profile_candidate(Worker& worker, const EvalRequest& request,
                                     const std::atomic<bool>* cancel) {
  json j = to_json(request);
  j["op"] = "profile";
  j["profile"] = request.profile == "basic" ? std::string("deep") : request.profile;
  j.erase("spare");
  j.erase("compile_baseline");
  // The profiled run and the report's import are each bounded by timeout_s inside the worker.
  auto limit = std::chrono::seconds(static_cast<long long>(2 * request.limits.timeout_s + 300));
  auto r = worker.call(j, limit, cancel);
  if (!r) return r;
  if (!r->contains("profile") || !(*r)["profile"].is_object())
    return util::fail(util::ErrorKind::kInternal, "the worker's profile reply has no profile");
  return (*r)["profile"];
}

static std::string us(const json& v) {
  if (!v.is_number()) return "-";
  double x = v.get<double>();
  if (x >= 1e6) return fmt::format("{:.3f} s", x / 1e6);
  if (x >= 1e3) return fmt::format("{:.3f} ms", x / 1e3);
  return fmt::format("{:.2f} us", x);
}

std::string format_report(const json& r) {
  std::string out;
  out += fmt::format("verdict   {}\n", r.value("verdict", "?"));
  if (r.contains("speedup") && r["speedup"].is_number())
    out += fmt::format("speedup   {:.3f}x over the reference\n", r["speedup"].get<double>());
  const json& c = r["runtime_us"];
  const json& ref = r["ref_runtime_us"];
  if (c.is_object() && c.value("n", 0) > 0)
    out += fmt::format("candidate {} median, {} mean +- {}, min {}, n={}\n", us(c["median"]),
                       us(c["mean"]), us(c["stderr"]), us(c["min"]), c.value("n", 0));
  if (ref.is_object() && ref.value("n", 0) > 0)
    out += fmt::format("reference {} median, {} mean +- {}, min {}, n={}\n", us(ref["median"]),
                       us(ref["mean"]), us(ref["stderr"]), us(ref["min"]), ref.value("n", 0));
  if (r.contains("speedup_compile") && r["speedup_compile"].is_number())
    out += fmt::format("vs compile {:.3f}x over torch.compile(reference), {} median\n",
                       r["speedup_compile"].get<double>(),
                       us(r["compile_runtime_us"].value("median", json())));
  if (r.contains("timing") && r["timing"].is_object() && r["timing"].contains("mode")) {
    const std::string mode =
        r["timing"]["mode"].is_string() ? r["timing"]["mode"].get<std::string>() : "";
    out += fmt::format("timing    {}\n",
                       mode == "cuda_graph" ? "CUDA-graph replay"
                       : mode == "events_rested"
                           ? "CUDA events per call, rested (an idle gap before each call)"
                           : "CUDA events / clock per call");
  }
  if (r["max_abs_error"].is_number())
    out += fmt::format("error     max abs {:.3g}, max rel {:.3g}\n",
                       r["max_abs_error"].get<double>(), r["max_rel_error"].get<double>());
  out +=
      fmt::format("device    {} ({} backend)\n", r.value("device", "?"), r.value("backend", "?"));
  if (r.contains("flags") && !r["flags"].empty()) {
    std::string flags;
    for (const auto& f : r["flags"]) flags += (flags.empty() ? "" : ", ") + f.get<std::string>();
    out += "flags     " + flags + "\n";
  }
  for (const auto& reason : r.value("reasons", json::array()))
    out += "  - " + reason.get<std::string>() + "\n";
  if (r.contains("profile")) out += profile::format_profile(r["profile"]);
  if (r.contains("wall_s")) out += fmt::format("took      {:.1f} s\n", r["wall_s"].get<double>());
  return out;
}

}  // namespace ok::eval
