#include "score/tsv.hpp"

#include <fmt/core.h>

#include <charconv>
#include <cmath>
#include <map>
#include <utility>

#include "util/paths.hpp"
#include "util/strings.hpp"

namespace ok::score {

using util::ErrorKind;
using util::fail;

namespace {

struct Context {
  std::string_view source;
  int line;
  std::string_view column;
};

util::Error bad(const Context& c, const std::string& what) {
  return {ErrorKind::kBadInput,
          fmt::format("{}:{}: column {}: {}", c.source, c.line, c.column, what)};
}

util::Result<int> parse_int(std::string_view s, const Context& c) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    return std::unexpected(bad(c, fmt::format("'{}' is not an integer", s)));
  return v;
}

util::Result<std::optional<double>> parse_number(std::string_view s, const Context& c) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
    return std::unexpected(bad(c, fmt::format("'{}' is not a number", s)));
  if (v < 0) return std::unexpected(bad(c, fmt::format("'{}' is negative", s)));
  return v;
}

util::Result<std::optional<double>> parse_speedup(std::string_view s, const Context& c) {
  auto v = parse_number(s, c);
  if (v && *v && **v <= 0)
    return std::unexpected(bad(c, fmt::format("speedup '{}' must be greater than 0", s)));
  return v;
}

}  // namespace

util::Result<std::vector<Row>> parse_tsv(std::string_view text, std::string_view source) {
  auto lines = util::split(text, '\n');
  for (auto& l : lines)
    if (!l.empty() && l.back() == '\r') l.pop_back();
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty())
    return fail(ErrorKind::kBadInput, fmt::format("{}: empty file, no header row", source));

  auto header = util::split(lines[0], '\t');
  std::map<std::string_view, size_t> index;
  for (size_t i = 0; i < header.size(); ++i)
    if (!index.emplace(header[i], i).second)
      return fail(ErrorKind::kBadInput,
                  fmt::format("{}:1: column '{}' appears twice in the header", source, header[i]));
  std::vector<std::string> missing;
  for (auto name : kColumns)
    if (!index.contains(name)) missing.emplace_back(name);
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    return fail(ErrorKind::kBadInput,
                fmt::format("{}:1: header lacks column(s) {} (see docs/tsv.md)", source, list));
  }

  std::vector<Row> rows;
  std::map<std::pair<int, int>, std::vector<int>> seen;  // (level, problem) -> lines
  for (size_t li = 1; li < lines.size(); ++li) {
    const int line = static_cast<int>(li) + 1;
    if (lines[li].empty()) continue;
    auto f = util::split(lines[li], '\t');
    if (f.size() != header.size())
      return fail(ErrorKind::kBadInput, fmt::format("{}:{}: {} fields, the header has {}", source,
                                                    line, f.size(), header.size()));
    auto field = [&](std::string_view col) -> std::string_view { return f[index.at(col)]; };
    auto ctx = [&](std::string_view col) { return Context{source, line, col}; };
    Row r;
    r.line = line;
    auto level = parse_int(field("level"), ctx("level"));
    if (!level) return std::unexpected(level.error());
    auto problem = parse_int(field("problem_id"), ctx("problem_id"));
    if (!problem) return std::unexpected(problem.error());
    r.level = *level;
    r.problem_id = *problem;
    r.name = field("name");
    r.backend = field("backend");
    r.model = field("model");
    r.verdict = field("verdict");
    r.flags = field("flags");
    if (index.contains(kDeviceColumn)) r.device = field(kDeviceColumn);
    for (auto [col, out] : {std::pair{kOptionalColumns[0], &r.runtime_stderr_us},
                            std::pair{kOptionalColumns[1], &r.eager_stderr_us},
                            std::pair{kOptionalColumns[2], &r.compile_stderr_us}}) {
      if (!index.contains(col)) continue;
      auto v = parse_number(field(col), ctx(col));
      if (!v) return std::unexpected(v.error());
      *out = *v;
    }
    auto correct = field("correct");
    if (correct == "true")
      r.correct = true;
    else if (correct == "false")
      r.correct = false;
    else
      return std::unexpected(
          bad(ctx("correct"), fmt::format("'{}' is not a boolean (true or false)", correct)));
    struct Numeric {
      std::string_view col;
      std::optional<double>* out;
    };
    for (auto [col, out] :
         {Numeric{"runtime_us", &r.runtime_us}, Numeric{"eager_us", &r.eager_us},
          Numeric{"compile_us", &r.compile_us}, Numeric{"cost_usd", &r.cost_usd}}) {
      auto v = parse_number(field(col), ctx(col));
      if (!v) return std::unexpected(v.error());
      *out = *v;
    }
    for (auto [col, out] : {Numeric{"speedup_eager", &r.speedup_eager},
                            Numeric{"speedup_compile", &r.speedup_compile}}) {
      auto v = parse_speedup(field(col), ctx(col));
      if (!v) return std::unexpected(v.error());
      *out = *v;
    }
    if (!field("attempts").empty()) {
      auto a = parse_int(field("attempts"), ctx("attempts"));
      if (!a) return std::unexpected(a.error());
      r.attempts = *a;
    }
    seen[{r.level, r.problem_id}].push_back(line);
    rows.push_back(std::move(r));
  }

  std::string dups;
  for (const auto& [key, at] : seen) {
    if (at.size() < 2) continue;
    std::string where;
    for (int l : at) where += (where.empty() ? "" : ", ") + std::to_string(l);
    dups += fmt::format("{}level {} problem {} (lines {})", dups.empty() ? "" : "; ", key.first,
                        key.second, where);
  }
  if (!dups.empty())
    return fail(
        ErrorKind::kBadInput,
        fmt::format("{}: problems given more than once, keep one row each: {}", source, dups));
  if (rows.empty()) return fail(ErrorKind::kBadInput, fmt::format("{}: no result rows", source));
  return rows;
}

util::Result<std::vector<Row>> read_tsv(const std::filesystem::path& path) {
  auto text = util::read_file(path);
  if (!text) return std::unexpected(text.error());
  return parse_tsv(*text, path.string());
}

namespace {

std::string field(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return out;
}

std::string number(const std::optional<double>& v) {
  return v ? fmt::format("{:.10g}", *v) : "";  // 10 digits: a speedup rounds only below 1e-9
}

}  // namespace

std::string format_tsv(const std::vector<Row>& rows) {
  std::string out;
  for (size_t i = 0; i < std::size(kColumns); ++i) {
    if (i) out += '\t';
    out += kColumns[i];
  }
  for (auto col : kOptionalColumns) out += fmt::format("\t{}", col);
  out += '\n';
  for (const auto& r : rows) {
    out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", r.level,
                       r.problem_id, field(r.name), field(r.backend), field(r.model),
                       r.correct ? "true" : "false", number(r.runtime_us), number(r.eager_us),
                       number(r.compile_us), number(r.speedup_eager), number(r.speedup_compile),
                       r.attempts ? std::to_string(*r.attempts) : "", number(r.cost_usd),
                       field(r.verdict), field(r.flags));
    out.pop_back();  // the newline: the optional columns follow
    out += fmt::format("\t{}\t{}\t{}\t{}\n", number(r.runtime_stderr_us), number(r.eager_stderr_us),
                       number(r.compile_stderr_us), field(r.device));
  }
  return out;
}

}  // namespace ok::score
