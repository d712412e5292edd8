// The session's options, its set-up (the problem gathered from the worker, the store row) and
// resume (attempts read back); the loop itself is in loop.cpp and loop_search.cpp.
#include "optimize/session.hpp"

#include <chrono>

#include "optimize/loop.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"

namespace ok::optimize {

using nlohmann::json;
using util::ErrorKind;
using util::fail;

json Options::to_json() const {
  json j = {{"reference", reference},
            {"name", name},
            {"overrides", overrides},
            {"backend", backend},
            {"model", model},
            {"base_url", base_url},
            {"mode", mode},
            {"iterations", iterations},
            {"out_dir", out_dir.string()},
            {"seed", seed},
            {"threads", limits.threads},
            {"timeout_s", limits.timeout_s},
            {"trials", limits.trials},
            {"timing_budget_s", limits.timing_budget_s},
            {"no_sandbox", limits.no_sandbox},
            {"search", search},
            {"in_flight", in_flight},
            {"strategy", strategy},
            {"stop_at_sol", stop_at_sol},
            {"compile_baseline", compile_baseline},
            {"prebuild", prebuild},
            {"prompt_budget_tokens", prompt_budget_tokens},
            {"skills", skills}};
  j["budget_wall_s"] = budget_wall_s ? json(*budget_wall_s) : json(nullptr);
  j["budget_device_s"] = budget_device_s ? json(*budget_device_s) : json(nullptr);
  j["level"] = level ? json(*level) : json(nullptr);
  j["number"] = number ? json(*number) : json(nullptr);
  j["budget_usd"] = budget_usd ? json(*budget_usd) : json(nullptr);
  return j;
}

Options Options::from_json(const json& j) {
  Options o;
  o.reference = j.value("reference", "");
  o.name = j.value("name", "");
  if (j.contains("level") && j["level"].is_number()) o.level = j["level"].get<int>();
  if (j.contains("number") && j["number"].is_number()) o.number = j["number"].get<int>();
  o.overrides = j.value("overrides", std::map<std::string, std::string>{});
  o.backend = j.value("backend", "cpu");
  o.model = j.value("model", "builtin");
  o.base_url = j.value("base_url", "");
  o.mode = j.value("mode", "fast");
  o.iterations = j.value("iterations", 0);
  if (j.contains("budget_usd") && j["budget_usd"].is_number())
    o.budget_usd = j["budget_usd"].get<double>();
  o.out_dir = j.value("out_dir", "");
  o.seed = j.value("seed", uint64_t{0});
  const eval::Limits defaults;
  o.limits.threads = j.value("threads", defaults.threads);
  o.limits.timeout_s = j.value("timeout_s", defaults.timeout_s);
  o.limits.trials = j.value("trials", defaults.trials);
  o.limits.timing_budget_s = j.value("timing_budget_s", defaults.timing_budget_s);
  o.limits.no_sandbox = j.value("no_sandbox", defaults.no_sandbox);
  // Sessions from before the search engine ran the plain loop: they resume as `prior`.
  o.search = j.value("search", std::string("prior"));
  o.in_flight = j.value("in_flight", 1);
  if (j.contains("budget_wall_s") && j["budget_wall_s"].is_number())
    o.budget_wall_s = j["budget_wall_s"].get<double>();
  if (j.contains("budget_device_s") && j["budget_device_s"].is_number())
    o.budget_device_s = j["budget_device_s"].get<double>();
  o.strategy = j.value("strategy", std::string());
  o.stop_at_sol = j.value("stop_at_sol", kSpeedOfLightStop);
  o.compile_baseline = j.value("compile_baseline", true);
  o.prebuild = j.value("prebuild", std::string("off"));
  o.prompt_budget_tokens = j.value("prompt_budget_tokens", 0);
  o.skills = j.value("skills", true);
  return o;
}

int default_iterations(const std::string& mode) {
  return mode == "deep" ? 16 : 6;
}

int default_in_flight(const std::string& mode, bool builtin) {
  if (builtin) return 1;
  return mode == "deep" ? 4 : 2;
}

std::string new_session_id() {
  return util::time_id("s");
}

store::SessionRow new_session_row(const std::string& id, const Options& o) {
  return {.id = id,
          .reference = o.reference,
          .name = o.name,
          .backend = o.backend,
          .model = o.model,
          .mode = o.mode,
          .status = "running",
          .options_json = o.to_json().dump(),
          .out_dir = o.out_dir.string()};
}

util::Result<ProblemContext> prepare_problem(eval::Worker& worker, const Options& o,
                                             const std::atomic<bool>* cancel) {
  ProblemContext p;
  p.reference_path = o.reference;
  p.name = o.name;
  p.backend = o.backend;
  auto src = util::read_file(o.reference);
  if (!src) return std::unexpected(src.error());
  p.source = *src;
  const auto limit = std::chrono::seconds(600);
  // FLOPs and bytes for the prompts. `inspect` runs the reference on the CPU at full size, which
  // costs seconds to minutes for big problems; the builtin generator does not need it, and the
  // evaluations report the same figures in their roofline.
  if (o.model != "builtin") {
    auto inspect = worker.call(
        {{"op", "inspect"}, {"reference", o.reference}, {"overrides", o.overrides}}, limit, cancel);
    if (!inspect) return std::unexpected(inspect.error());
    p.inspect = *inspect;
  } else {
    p.inspect = json::object();
  }
  auto graph = worker.call(
      {{"op", "analyze"}, {"reference", o.reference}, {"overrides", o.overrides}}, limit, cancel);
  if (!graph &&
      (graph.error().kind == ErrorKind::kBadInput || graph.error().kind == ErrorKind::kCancelled))
    return std::unexpected(graph.error());
  // A graph that cannot be built is not fatal: an LLM does not need it, and the builtin
  // generator reports the problem unsupported with the reason.
  p.graph = graph ? *graph : json{{"traceable", false}, {"reason", graph.error().message}};
  auto device = worker.call(
      {{"op", "device_info"}, {"device", o.backend == "cpu" ? "cpu" : "cuda"}}, limit, cancel);
  if (!device && device.error().kind == ErrorKind::kCancelled)
    return std::unexpected(device.error());
  p.device = device ? *device : json{{"name", o.backend == "cpu" ? "CPU" : "GPU"}};
  return p;
}

store::AttemptRow attempt_row(const std::string& session, const Attempt& a,
                              std::optional<int64_t> candidate_id) {
  return {.session = session,
          .number = a.number,
          .generator = a.generator,
          .candidate_id = candidate_id,
          .evaluation_id = a.evaluation_id,
          .path = a.path,
          .verdict = a.verdict,
          .correct = a.correct,
          .speedup = a.speedup,
          .runtime_us = a.runtime_us,
          .error = a.error,
          .cost_usd = a.cost_usd,
          .params_json = a.params.dump(),
          .description = a.description,
          .diagnosis_json = a.diagnosis.is_null() ? "" : a.diagnosis.dump(),
          .wall_s = a.wall_s};
}

std::vector<Attempt> attempts_from_rows(const std::vector<store::AttemptRow>& rows,
                                        store::Store* store) {
  // Stored JSON that is missing or no longer parses reads as `empty`: {} for params, null for a
  // diagnosis.
  auto parsed = [](const std::string& text, json empty) {
    if (text.empty()) return empty;
    json j = json::parse(text, nullptr, false);
    return j.is_discarded() ? empty : j;
  };
  std::vector<Attempt> out;
  for (const auto& r : rows) {
    Attempt a{.number = r.number,
              .generator = r.generator,
              .path = r.path,
              .verdict = r.verdict,
              .correct = r.correct,
              .speedup = r.speedup,
              .runtime_us = r.runtime_us,
              .error = r.error,
              .cost_usd = r.cost_usd,
              .params = parsed(r.params_json, json::object()),
              .description = r.description,
              .diagnosis = parsed(r.diagnosis_json, nullptr),
              .wall_s = r.wall_s,
              .evaluation_id = r.evaluation_id};
    if (store && a.evaluation_id) {
      auto text = store->evaluation_result(*a.evaluation_id);
      if (text && *text) {
        json result = json::parse(**text, nullptr, false);
        if (result.is_object()) a.summary = summarize_result(result);
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

search::Observation observation_of(const Attempt& a, const search::TemplateSpace& space) {
  search::Observation o;
  o.attempt = a.number;
  o.evaluated = a.evaluation_id.has_value();
  o.correct = a.correct;
  o.speedup = a.speedup;
  o.verdict = a.verdict;
  o.cost_usd = a.cost_usd;
  if (a.diagnosis.is_object()) {
    o.bottleneck = a.diagnosis.value("bottleneck", "");
    if (a.diagnosis.contains("suggestions")) o.suggestions = a.diagnosis["suggestions"];
  }
  if (!space.empty() && a.params.is_object()) o.point = space.find(a.params);
  return o;
}

util::Result<Outcome> run_session(const std::string& id, const Options& o, ProblemContext problem,
                                  std::vector<Attempt> resumed, Dependencies deps) {
  Loop loop(id, o, std::move(problem), std::move(resumed), std::move(deps));
  return loop.run();
}

}  // namespace ok::optimize
