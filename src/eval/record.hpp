// Recording an evaluation in the store: the problem and candidate sources exactly as the worker
// read and hashed them (a file may change meanwhile), and the evaluation row with the whole
// result. Shared by `evaluate`, `optimize` and later `sweep`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "eval/evaluator.hpp"
#include "store/store.hpp"

namespace ok::eval {

struct ProblemIdentity {
  std::string name, path;
  std::optional<int> level, number;
};

struct RecordedIds {
  int64_t problem_id = 0, candidate_id = 0, evaluation_id = 0;
};

util::Result<RecordedIds> record_evaluation(store::Store& st, const ProblemIdentity& problem,
                                            const std::string& candidate_path,
                                            const nlohmann::json& result,
                                            const std::optional<std::string>& session);

// A source file as the worker reads and names it (problem.read_source): {"path", "source",
// "source_hash"}. A readable source (UTF-8, not blank, no NUL byte, at most 8 MiB) is its text
// without a leading byte-order mark and the SHA-256 of that text; any other file has no text and
// the SHA-256 of its raw bytes (the first 8 MiB + 1, all the worker reads).
nlohmann::json source_entry(const std::string& path);

// An evaluation whose remote worker was lost (util::ErrorKind::kRemoteLost): recorded with verdict
// `evaluator_error`, flag `remote_lost` and `message` as its reason, the sources read here and
// hashed as the worker hashes them. Never a verdict on the candidate.
util::Result<RecordedIds> record_lost_evaluation(store::Store& st, const ProblemIdentity& problem,
                                                 const std::string& candidate_path,
                                                 const EvalRequest& request,
                                                 const std::string& message,
                                                 const std::optional<std::string>& session);

}  // namespace ok::eval
