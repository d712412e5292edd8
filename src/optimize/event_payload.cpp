#include "optimize/event_payload.hpp"

namespace ok::optimize::payload {

using nlohmann::json;

namespace {

template <typename T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

std::optional<double> number_at(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

std::string text_at(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

}  // namespace

json standing(const Standing& s) {
  return {{"best_speedup", or_null(s.best_speedup)},
          {"cost_usd", s.cost_usd},
          {"elapsed_s", s.elapsed_s},
          {"recorded", s.recorded}};
}

Standing standing_from(int total, const json& p) {
  Standing s;
  s.total = total;
  s.best_speedup = number_at(p, "best_speedup");
  s.cost_usd = number_at(p, "cost_usd").value_or(0);
  s.elapsed_s = number_at(p, "elapsed_s").value_or(0);
  s.recorded = static_cast<int>(number_at(p, "recorded").value_or(0));
  return s;
}

json info(const SessionInfo& i) {
  return {{"session", i.session}, {"problem", i.problem}, {"backend", i.backend},
          {"model", i.model},     {"device", i.device},   {"what", i.what}};
}

SessionInfo info_from(const json& j) {
  return {.session = text_at(j, "session"),
          .problem = text_at(j, "problem"),
          .backend = text_at(j, "backend"),
          .model = text_at(j, "model"),
          .device = text_at(j, "device"),
          .what = text_at(j, "what")};
}

json attempt(const Attempt& a) {
  const json& summary = a.summary;
  const json flags = summary.is_object() && summary.contains("flags") && summary["flags"].is_array()
                         ? summary["flags"]
                         : json::array();
  return {{"number", a.number},
          {"generator", a.generator},
          {"path", a.path},
          {"verdict", a.verdict},
          {"correct", a.correct},
          {"speedup", or_null(a.speedup)},
          {"runtime_us", or_null(a.runtime_us)},
          {"error", a.error},
          {"cost_usd", a.cost_usd},
          {"description", a.description},
          {"wall_s", a.wall_s},
          {"evaluation_id", or_null(a.evaluation_id)},
          {"flags", flags},
          {"eager_us", or_null(number_at(summary, "ref_runtime_us"))},
          {"compile_us", or_null(number_at(summary, "compile_runtime_us"))},
          {"params", a.params.is_object() ? a.params : json::object()}};
}

Attempt attempt_from(const json& j) {
  Attempt a;
  a.number = static_cast<int>(number_at(j, "number").value_or(0));
  a.generator = text_at(j, "generator");
  a.path = text_at(j, "path");
  a.verdict = text_at(j, "verdict");
  a.correct = j.is_object() && j.contains("correct") && j["correct"].is_boolean() &&
              j["correct"].get<bool>();
  a.speedup = number_at(j, "speedup");
  a.runtime_us = number_at(j, "runtime_us");
  a.error = text_at(j, "error");
  a.cost_usd = number_at(j, "cost_usd").value_or(0);
  a.description = text_at(j, "description");
  a.wall_s = number_at(j, "wall_s").value_or(0);
  if (auto id = number_at(j, "evaluation_id")) a.evaluation_id = static_cast<int64_t>(*id);
  if (j.is_object() && j.contains("params") && j["params"].is_object()) a.params = j["params"];
  // What the payload carries of the evaluation's summary, under the summary's own keys.
  json summary = json::object();
  if (j.is_object() && j.contains("flags") && j["flags"].is_array()) summary["flags"] = j["flags"];
  if (auto e = number_at(j, "eager_us")) summary["ref_runtime_us"] = *e;
  if (auto c = number_at(j, "compile_us")) summary["compile_runtime_us"] = *c;
  if (!summary.empty()) a.summary = std::move(summary);
  return a;
}

json diagnosis(const Attempt& a) {
  return {{"diagnosis", a.diagnosis}, {"cost_usd", a.cost_usd}, {"wall_s", a.wall_s}};
}

std::string bottleneck(const Attempt& a) {
  return text_at(a.diagnosis, "bottleneck");
}

Attempt diagnosis_from(int number, const json& j) {
  Attempt a;
  a.number = number;
  if (j.is_object() && j.contains("diagnosis")) a.diagnosis = j["diagnosis"];
  a.cost_usd = number_at(j, "cost_usd").value_or(0);
  a.wall_s = number_at(j, "wall_s").value_or(0);
  return a;
}

}  // namespace ok::optimize::payload
