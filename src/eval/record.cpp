#include "eval/record.hpp"

#include <filesystem>

#include "util/digest.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"

namespace ok::eval {

using nlohmann::json;

util::Result<RecordedIds> record_evaluation(store::Store& st, const ProblemIdentity& problem,
                                            const std::string& candidate_path, const json& r,
                                            const std::optional<std::string>& session) {
  static const json kEmpty = json::object();
  const json& prob = r.contains("problem") ? r["problem"] : kEmpty;
  const json& cand = r.contains("candidate") ? r["candidate"] : kEmpty;
  RecordedIds ids;
  auto pid = st.upsert_problem({prob.value("source_hash", ""), problem.name, problem.path,
                                problem.level, problem.number, prob.value("source", "")});
  if (!pid) return std::unexpected(pid.error());
  ids.problem_id = *pid;
  auto cid = st.upsert_candidate({cand.value("source_hash", ""), cand.value("source", ""),
                                  std::filesystem::absolute(candidate_path).string()});
  if (!cid) return std::unexpected(cid.error());
  ids.candidate_id = *cid;
  auto num = [&](const char* key, const char* sub = nullptr) -> std::optional<double> {
    if (!r.contains(key)) return std::nullopt;
    const json& v =
        sub ? (r[key].is_object() ? r[key].value(sub, json(nullptr)) : json(nullptr)) : r[key];
    return v.is_number() ? std::optional(v.get<double>()) : std::nullopt;
  };
  store::EvaluationRow e;
  e.problem_id = *pid;
  e.candidate_id = *cid;
  e.session = session;
  e.verdict = r.value("verdict", "");
  e.compiled = r.value("compiled", false);
  e.correct = r.value("correct", false);
  e.valid = r.value("valid", false);
  e.speedup = num("speedup");
  e.runtime_median_us = num("runtime_us", "median");
  e.ref_runtime_median_us = num("ref_runtime_us", "median");
  e.max_abs_error = num("max_abs_error");
  e.max_rel_error = num("max_rel_error");
  e.backend = r.value("backend", "");
  e.device = r.value("device", "");
  e.flags_json = r.value("flags", json::array()).dump();
  e.reasons_json = r.value("reasons", json::array()).dump();
  e.overrides_json = prob.value("overrides", json::object()).dump();
  e.versions_json = r.value("versions", json::object()).dump();
  e.result_json = r.dump();
  e.wall_s = r.value("wall_s", 0.0);
  auto eid = st.insert_evaluation(e);
  if (!eid) return std::unexpected(eid.error());
  ids.evaluation_id = *eid;
  return ids;
}

// The worker's rule (problem.read_source), so that the store's source_hash names a file the same
// way whichever side recorded it; tests/cpp/test_record.cpp and python/tests hold both to it.
constexpr size_t kMaxSourceBytes = size_t{8} << 20;  // the worker's MAX_SOURCE_BYTES

nlohmann::json source_entry(const std::string& path) {
  std::string raw = util::read_file(path).value_or("");
  if (raw.size() > kMaxSourceBytes + 1) raw.resize(kMaxSourceBytes + 1);
  const bool blank = raw.find_first_not_of(" \t\n\r\f\v") == std::string::npos;
  const bool readable = raw.size() <= kMaxSourceBytes && !blank &&
                        raw.find('\0') == std::string::npos && util::is_utf8(raw);
  if (!readable) return {{"path", path}, {"source", ""}, {"source_hash", util::sha256_hex(raw)}};
  if (raw.starts_with("\xEF\xBB\xBF")) raw.erase(0, 3);
  return {{"path", path}, {"source", raw}, {"source_hash", util::sha256_hex(raw)}};
}

util::Result<RecordedIds> record_lost_evaluation(store::Store& st, const ProblemIdentity& problem,
                                                 const std::string& candidate_path,
                                                 const EvalRequest& request,
                                                 const std::string& message,
                                                 const std::optional<std::string>& session) {
  json result = {{"verdict", "evaluator_error"},
                 {"compiled", false},
                 {"correct", false},
                 {"valid", false},
                 {"backend", request.backend},
                 {"device", request.device.value_or("")},
                 {"flags", json::array({"remote_lost"})},
                 {"reasons", json::array({message})},
                 {"problem", source_entry(request.reference)},
                 {"candidate", source_entry(request.candidate)}};
  result["problem"]["overrides"] = request.overrides;
  return record_evaluation(st, problem, candidate_path, result, session);
}

}  // namespace ok::eval
