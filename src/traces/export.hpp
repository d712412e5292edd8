// `openkernel traces export`: the store's sessions as a dataset directory (docs/traces.md):
//   raw/YYYY-MM/session_<id>.{parquet,jsonl}   one row per attempt (trace schema v1)
//   processed/training_pairs_v1.*, processed/strategy_rewards_v1.*, processed/critic_accuracy_v1.*
//   metadata/schema.json, metadata/stats.json
// Everything is written into a temporary sibling of `out` and renamed into place at the end, so
// a reader never sees a partial export; on failure the sibling is removed. An existing `out` is
// replaced only when it is empty or an earlier export (it has metadata/stats.json).
//
// export_traces is the library entry point (`hub push traces` uploads what it writes). It uses
// the caller's Store (not thread-safe with other users of that Store).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "store/store.hpp"
#include "traces/trace.hpp"
#include "util/error.hpp"

namespace ok::traces {

struct ExportOptions {
  std::filesystem::path out;
  std::string format = "parquet";  // parquet or jsonl
  Filters filters;
  std::string store_label;  // recorded in stats.json (the store's path)
};

struct ExportSummary {
  std::filesystem::path out;
  int sessions = 0, attempts = 0;  // exported (after filters and dedupe)
  int attempts_in_store = 0, filtered_out = 0, duplicates = 0;
  int training_pairs = 0, strategy_rows = 0, critic_rows = 0;
  std::vector<std::string> files;  // relative to out, sorted
};

// Errors: kUsage for an unknown format or a malformed --since; kBadInput when the store holds no
// attempt, when no attempt passes the filters, or when `out` cannot be written or is a directory
// that is not an earlier export.
util::Result<ExportSummary> export_traces(store::Store& store, const ExportOptions& options);

}  // namespace ok::traces
