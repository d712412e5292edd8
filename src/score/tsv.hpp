// Reading a sweep's results TSV (docs/tsv.md): a header row naming the columns, then one row per
// problem, tab-separated. Columns are found by name; every documented column must be present and
// extra columns are ignored, except the optional appended ones (kOptionalColumns), read when
// present. Numeric fields may be empty (not applicable). Stateless, thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace ok::score {

// The documented columns, in their written order.
inline constexpr std::string_view kColumns[] = {
    "level",           "problem_id", "name",     "backend",    "model",
    "correct",         "runtime_us", "eager_us", "compile_us", "speedup_eager",
    "speedup_compile", "attempts",   "cost_usd", "verdict",    "flags"};
// Optional, appended after the documented ones in this order (writers always write them; old
// files without them still read): the standard errors of the three times and the device's name.
inline constexpr std::string_view kOptionalColumns[] = {"runtime_stderr_us", "eager_stderr_us",
                                                        "compile_stderr_us", "device"};
inline constexpr std::string_view kDeviceColumn = "device";

struct Row {
  int line = 0;  // 1-based line in the file, for messages
  int level = 0;
  int problem_id = 0;
  std::string name, backend, model;
  bool correct = false;
  std::optional<double> runtime_us, eager_us, compile_us;
  std::optional<double> speedup_eager, speedup_compile;  // > 0 when present
  std::optional<int> attempts;
  std::optional<double> cost_usd;
  std::string verdict, flags;
  // The optional columns: standard errors of runtime_us, eager_us and compile_us (empty when the
  // writer did not know them), and the device's name (empty when absent).
  std::optional<double> runtime_stderr_us, eager_stderr_us, compile_stderr_us;
  std::string device;
};

// Parses TSV text; `source` names the file in messages. Errors are kBadInput and name the line:
// a missing column, a short or long row, a bad number or boolean, a problem given twice, no rows.
util::Result<std::vector<Row>> parse_tsv(std::string_view text, std::string_view source);
util::Result<std::vector<Row>> read_tsv(const std::filesystem::path& path);

// The TSV text of `rows` (header first: the fifteen documented columns, then the optional ones;
// rows in the given order; numbers with enough digits to read back, empty optionals as empty
// fields; tabs and newlines in text fields become spaces).
std::string format_tsv(const std::vector<Row>& rows);

}  // namespace ok::score
