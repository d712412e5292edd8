// The JSON form of the strategy population (strategy.hpp): Strategy, Population::Record and
// Population to_json/from_json, with the field readers that validate what the store gives back.
// The population's logic (choose, record, mutate, prune) is in strategy.cpp.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>

#include "search/strategy.hpp"
#include "search/strategy_internal.hpp"

namespace ok::search {

using nlohmann::json;
using util::ErrorKind;
using util::fail;

namespace {

// Field readers for from_json: a missing key keeps `out`; a present one must have the type and
// range, else the message names the field.
util::Result<void> read_string(const json& j, const char* key, std::string& out) {
  if (!j.contains(key)) return {};
  if (!j[key].is_string())
    return fail(ErrorKind::kBadInput, fmt::format("strategy field '{}' must be a string", key));
  out = j[key].get<std::string>();
  return {};
}

util::Result<void> read_number(const json& j, const char* key, double lo, double hi, double& out) {
  if (!j.contains(key)) return {};
  const json& v = j[key];
  if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi))
    return fail(ErrorKind::kBadInput,
                fmt::format("strategy field '{}' must be a number in [{}, {}], "
                            "got {}",
                            key, lo, hi, v.dump()));
  out = v.get<double>();
  return {};
}

util::Result<void> read_int(const json& j, const char* key, int lo, int hi, int& out) {
  if (!j.contains(key)) return {};
  const json& v = j[key];
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    return fail(ErrorKind::kBadInput,
                fmt::format("strategy field '{}' must be an integer in [{}, {}], got {}", key, lo,
                            hi, v.dump()));
  out = static_cast<int>(v.get<int64_t>());
  return {};
}

// A record's non-negative integer field.
util::Result<int> record_int(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return 0;
  const json& v = j[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1 << 30))
    return fail(ErrorKind::kBadInput,
                fmt::format("{}.{} must be a non-negative integer, got {}", where, key, v.dump()));
  return static_cast<int>(v.get<int64_t>());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Strategy

json Strategy::to_json() const {
  return {{"id", id},
          {"parent", parent},
          {"guidance", guidance},
          {"exploration", exploration},
          {"stagnation_window", stagnation_window},
          {"min_gain", min_gain},
          {"jump_distance", jump_distance},
          {"diagnosis_weight", diagnosis_weight},
          {"mutation", mutation}};
}

util::Result<Strategy> Strategy::from_json(const json& j) {
  if (!j.is_object()) return fail(ErrorKind::kBadInput, "a strategy must be a JSON object");
  Strategy s;
  if (!j.contains("id") || !j["id"].is_string() || j["id"].get<std::string>().empty())
    return fail(ErrorKind::kBadInput, "strategy field 'id' must be a non-empty string");
  s.id = j["id"].get<std::string>();
  using namespace detail;  // the knobs' ranges
  for (auto r :
       {read_string(j, "parent", s.parent), read_string(j, "guidance", s.guidance),
        read_string(j, "mutation", s.mutation),
        read_number(j, "exploration", kExplorationMin, kExplorationMax, s.exploration),
        read_int(j, "stagnation_window", kWindowMin, kWindowMax, s.stagnation_window),
        read_number(j, "min_gain", kMinGainMin, kMinGainMax, s.min_gain),
        read_int(j, "jump_distance", kJumpMin, kJumpMax, s.jump_distance),
        read_number(j, "diagnosis_weight", kDiagnosisMin, kDiagnosisMax, s.diagnosis_weight)})
    if (!r) return std::unexpected(r.error());
  return s;
}

// ---------------------------------------------------------------------------------------------
// Population::Record

json Population::Record::to_json() const {
  return {{"problems", problems},
          {"correct", correct},
          {"log_speedup_sum", log_speedup_sum},
          {"cost_usd", cost_usd},
          {"evaluations", evaluations},
          {"evaluations_to_best", evaluations_to_best},
          {"late_best", late_best},
          {"no_gain", no_gain},
          {"failures", failures}};
}

util::Result<Population::Record> Population::Record::from_json(const json& j,
                                                               const std::string& where) {
  if (!j.is_object()) return fail(ErrorKind::kBadInput, where + " must be a JSON object");
  Record r;
  for (auto [key, field] :
       {std::pair{"problems", &r.problems}, std::pair{"correct", &r.correct},
        std::pair{"evaluations", &r.evaluations},
        std::pair{"evaluations_to_best", &r.evaluations_to_best},
        std::pair{"late_best", &r.late_best}, std::pair{"no_gain", &r.no_gain}}) {
    auto v = record_int(j, key, where);
    if (!v) return std::unexpected(v.error());
    *field = *v;
  }
  if (r.correct > r.problems || r.no_gain > r.problems || r.late_best > r.correct)
    return fail(ErrorKind::kBadInput,
                where +
                    ": correct, no_gain and late_best cannot exceed problems (late_best "
                    "cannot exceed correct)");
  for (auto [key, field] :
       {std::pair{"log_speedup_sum", &r.log_speedup_sum}, std::pair{"cost_usd", &r.cost_usd}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_number())
      return fail(ErrorKind::kBadInput, fmt::format("{}.{} must be a number", where, key));
    *field = j[key].get<double>();
  }
  if (r.cost_usd < 0) return fail(ErrorKind::kBadInput, where + ".cost_usd must not be negative");
  if (j.contains("failures")) {
    const json& f = j["failures"];
    if (!f.is_array())
      return fail(ErrorKind::kBadInput, where + ".failures must be an array of strings");
    for (const auto& e : f) {
      if (!e.is_string())
        return fail(ErrorKind::kBadInput, where + ".failures must be an array of strings");
      r.failures.push_back(e.get<std::string>());
    }
    detail::keep_last(r.failures, kMaxFailures);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Population

json Population::to_json() const {
  json list = json::array();
  for (const auto& s : strategies_) {
    json j = s.to_json();
    json records = json::object();
    if (auto it = records_.find(s.id); it != records_.end())
      for (const auto& [cls, r] : it->second) records[cls] = r.to_json();
    j["records"] = std::move(records);
    list.push_back(std::move(j));
  }
  return {{"version", 1}, {"next_mutant", next_mutant_}, {"strategies", std::move(list)}};
}

util::Result<Population> Population::from_json(const json& j) {
  if (!j.is_object())
    return fail(ErrorKind::kBadInput, "a strategy population must be a JSON object");
  if (j.contains("version") && (!j["version"].is_number_integer() || j["version"].get<int>() != 1))
    return fail(ErrorKind::kBadInput,
                "strategy population field 'version' must be 1, got " + j["version"].dump());
  Population p;
  p.strategies_.clear();
  if (j.contains("next_mutant")) {
    const json& n = j["next_mutant"];
    if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > (1 << 30))
      return fail(
          ErrorKind::kBadInput,
          "strategy population field 'next_mutant' must be a positive integer, got " + n.dump());
    p.next_mutant_ = static_cast<int>(n.get<int64_t>());
  }
  if (!j.contains("strategies") || !j["strategies"].is_array() || j["strategies"].empty())
    return fail(ErrorKind::kBadInput,
                "strategy population field 'strategies' must be a non-empty array");
  const json& list = j["strategies"];
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = fmt::format("strategies[{}]", i);
    auto s = Strategy::from_json(list[i]);
    if (!s) return fail(ErrorKind::kBadInput, where + ": " + s.error().message);
    if (p.find(s->id))
      return fail(ErrorKind::kBadInput, where + ": duplicate strategy id '" + s->id + "'");
    if (list[i].contains("records")) {
      const json& recs = list[i]["records"];
      if (!recs.is_object())
        return fail(ErrorKind::kBadInput, where + ".records must be an object of classes");
      for (const auto& [cls, rj] : recs.items()) {
        if (cls.empty())
          return fail(ErrorKind::kBadInput, where + ".records has an empty class name");
        auto r = Record::from_json(rj, where + ".records." + cls);
        if (!r) return std::unexpected(r.error());
        p.records_[s->id][cls] = std::move(*r);
      }
    }
    p.strategies_.push_back(std::move(*s));
  }
  return p;
}

}  // namespace ok::search
