// The OpenKernel store: one SQLite database (WAL) holding problems, candidates and evaluations
// (and, as later migrations add them, sessions, LLM calls, intent trees and strategies).
//
// Store owns its connection; use one Store per thread. Rows are written as they happen so that a
// crash never loses what was already recorded. Schema: docs/store.md.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "store/sqlite.hpp"

namespace ok::store {

struct ProblemRow {
  std::string source_hash;
  std::string name;
  std::string path;
  std::optional<int> level;
  std::optional<int> problem_number;
  std::string source;
};

struct CandidateRow {
  std::string source_hash;
  std::string source;
  std::string path;
};

struct EvaluationRow {
  int64_t problem_id = 0;
  int64_t candidate_id = 0;
  std::optional<std::string> session;
  std::string verdict;
  bool compiled = false, correct = false, valid = false;
  std::optional<double> speedup, runtime_median_us, ref_runtime_median_us;
  std::optional<double> max_abs_error, max_rel_error;
  std::string backend, device;
  std::string flags_json = "[]", reasons_json = "[]", overrides_json = "{}", versions_json = "{}";
  std::string result_json = "{}";
  double wall_s = 0;
};

class Store {
 public:
  // The default location: $XDG_DATA_HOME/openkernel/openkernel.db.
  static std::filesystem::path default_path();
  static util::Result<Store> open(const std::filesystem::path& path);

  util::Result<int64_t> upsert_problem(const ProblemRow& p);
  util::Result<int64_t> upsert_candidate(const CandidateRow& c);
  util::Result<int64_t> insert_evaluation(const EvaluationRow& e);
  util::Result<int64_t> count_evaluations();

  Database& db() { return db_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  Store(Database db, std::filesystem::path path) : db_(std::move(db)), path_(std::move(path)) {}
  Database db_;
  std::filesystem::path path_;
};

}  // namespace ok::store
