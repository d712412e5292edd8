// Trace rows: the store's sessions and attempts as the versioned trace schema defines them
// (docs/traces.md): one JSON object per attempt with its session's fields, its prompt and reply,
// code, verdict, timings, profile, roofline, diagnosis, tokens, cost and the two rewards.
//
// collect() reads the store (through Store's trace reads) and applies the export's filters and
// dedupe; the schemas describe the rows for the Parquet writer. Not thread-safe per Store (the
// caller's Store is used); the functions without a Store are pure.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/store.hpp"
#include "traces/parquet.hpp"
#include "util/error.hpp"

namespace ok::traces {

inline constexpr int kTraceSchemaVersion = 1;

// The export's filters (docs/traces.md, "Filters"). Session filters: since, level, backend,
// model; attempt filters: correct_only, min_speedup; then dedupe.
struct Filters {
  std::string since;  // YYYY-MM-DD: sessions started on or after that day (UTC); empty: all
  std::optional<int> level;
  std::string backend, model;  // empty: any
  bool correct_only = false;
  std::optional<double> min_speedup;
  bool dedupe = false;
};

struct Collected {
  // The attempts that passed every filter (and dedupe), by session start, then attempt number.
  std::vector<nlohmann::json> rows;
  // Every attempt of the sessions that passed the session filters (for the processed tables that
  // need whole sessions: strategy rewards, critic accuracy).
  std::vector<nlohmann::json> session_rows;
  std::map<std::string, std::string> reference_source;  // session id -> the problem's source
  int sessions_in_store = 0, attempts_in_store = 0;
  int filtered_out = 0, duplicates = 0;
};

util::Result<Collected> collect(store::Store& store, const Filters& filters);

// The code as dedupe compares it: line endings to \n, lines that are only a `#` comment and
// blank lines dropped, trailing white space cut (docs/traces.md, "Dedupe").
std::string normalize_code(std::string_view code);
// FNV-1a 64 of normalize_code(code), 16 hex digits.
std::string code_hash(std::string_view code);

// The one-row-per-attempt schema of raw/ (trace schema version kTraceSchemaVersion).
const Schema& attempt_schema();

}  // namespace ok::traces
