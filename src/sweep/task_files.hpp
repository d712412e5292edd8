// The files of a task's folder (docs/sweep.md, "Files") and the small readers and writers that the
// task rules, the driver and the executors share. Internal to src/sweep.
//
// Readers never fail: a missing or malformed file reads as empty (text) or null (JSON). Writers
// replace a file atomically (write beside it, then rename). No state; safe from any thread.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sweep/sweep.hpp"
#include "util/error.hpp"

namespace ok::sweep::files {

inline constexpr const char* kReport = "report.json";  // optimize's report
inline constexpr const char* kError = "error.json";    // why the last run ended without a report
inline constexpr const char* kSession = "session";     // the optimize session's id
inline constexpr const char* kLog = "optimize.log";    // optimize's stderr
inline constexpr const char* kStdout = "stdout.json";  // optimize's stdout
inline constexpr const char* kTaskStore = "store.db";  // SLURM: the task's own store

// The file's text, trimmed; empty when it cannot be read.
std::string read_text(const std::filesystem::path& p);
// The file's JSON; null when it cannot be read or parsed.
nlohmann::json read_json(const std::filesystem::path& p);
util::Result<void> write_atomic(const std::filesystem::path& p, std::string_view content);
// The last `max` characters of a log, for error.json and messages.
std::string log_tail(const std::filesystem::path& p, size_t max = 1500);
// The "error" string of the task's report.json; empty when there is none.
std::string report_error(const Task& t);
// Writes the task's error.json: a run that ended without a finished report, and why.
void record_failure(const Options& o, const Task& t, const std::string& why);

}  // namespace ok::sweep::files
