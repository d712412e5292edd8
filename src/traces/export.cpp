#include "traces/export.hpp"

#include <fmt/chrono.h>
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>

#include "score/reward.hpp"
#include "traces/datasets.hpp"

namespace ok::traces {

namespace fs = std::filesystem;

namespace {

using nlohmann::json;
using util::ErrorKind;

// The export being built: a hidden sibling of `out`, removed unless committed.
class Staging {
 public:
  explicit Staging(fs::path out) : out_(std::move(out)) {
    fs::path name = out_.filename().empty() ? out_.parent_path().filename() : out_.filename();
    dir_ = out_.parent_path() / fmt::format(".{}.partial-{}", name.string(), ::getpid());
  }
  Staging(const Staging&) = delete;
  ~Staging() {
    std::error_code ec;
    if (!committed_) fs::remove_all(dir_, ec);
  }
  util::Result<void> create() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    if (!fs::create_directories(dir_, ec) || ec)
      return util::fail(ErrorKind::kBadInput,
                        fmt::format("cannot write the export beside {}: {}", out_.string(),
                                    ec ? ec.message() : "the directory already exists"));
    return {};
  }
  const fs::path& dir() const { return dir_; }
  // Moves the finished export to `out`: replaces an empty directory or an earlier export.
  util::Result<void> commit() {
    std::error_code ec;
    fs::path old;
    if (fs::exists(out_, ec)) {
      bool empty = fs::is_directory(out_, ec) && fs::is_empty(out_, ec);
      if (!empty && !fs::exists(out_ / "metadata" / "stats.json", ec))
        return util::fail(ErrorKind::kBadInput,
                          fmt::format("{} exists and is not an earlier trace export (no "
                                      "metadata/stats.json): choose another --out",
                                      out_.string()));
      old = dir_.string() + ".old";
      fs::rename(out_, old, ec);
      if (ec) return fail_move(ec);
    }
    fs::rename(dir_, out_, ec);
    if (ec) {
      std::error_code back;
      if (!old.empty()) fs::rename(old, out_, back);
      return fail_move(ec);
    }
    committed_ = true;
    if (!old.empty()) fs::remove_all(old, ec);
    return {};
  }

 private:
  util::Result<void> fail_move(const std::error_code& ec) const {
    return util::fail(ErrorKind::kBadInput, fmt::format("cannot move the export into {}: {}",
                                                        out_.string(), ec.message()));
  }
  fs::path out_, dir_;
  bool committed_ = false;
};

util::Result<void> write_text(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) return util::fail(ErrorKind::kBadInput, "cannot write " + path.string());
  return {};
}

std::string dump(const json& j, int indent = -1) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

// Writes one table as STEM.parquet or STEM.jsonl under the staging directory.
util::Result<void> write_table(const Staging& st, const std::string& stem, const std::string& table,
                               const Schema& schema, const std::vector<json>& rows,
                               const std::string& format, std::vector<std::string>& files) {
  std::string rel = stem + "." + format;
  fs::path path = st.dir() / rel;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  files.push_back(rel);
  if (format == "jsonl") {
    std::string text;
    for (const auto& r : rows) text += dump(r) + "\n";
    return write_text(path, text);
  }
  ParquetOptions o;
  o.metadata = {{"openkernel.table", table},
                {"openkernel.trace_schema_version", std::to_string(kTraceSchemaVersion)}};
  return write_parquet(path, schema, rows, o);
}

std::string file_safe(const std::string& id) {
  std::string out = id;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return out;
}

util::Result<void> check_options(const ExportOptions& o) {
  if (o.format != "parquet" && o.format != "jsonl")
    return util::fail(ErrorKind::kUsage,
                      fmt::format("unknown --format {} (parquet or jsonl)", o.format));
  static const std::regex day(R"(\d{4}-\d{2}-\d{2})");
  if (!o.filters.since.empty() && !std::regex_match(o.filters.since, day))
    return util::fail(ErrorKind::kUsage,
                      fmt::format("--since {}: give a day as YYYY-MM-DD", o.filters.since));
  if (o.out.empty()) return util::fail(ErrorKind::kUsage, "--out DIR is required");
  return {};
}

json filters_json(const Filters& f) {
  return {{"since", f.since.empty() ? json() : json(f.since)},
          {"level", f.level ? json(*f.level) : json()},
          {"backend", f.backend.empty() ? json() : json(f.backend)},
          {"model", f.model.empty() ? json() : json(f.model)},
          {"correct_only", f.correct_only},
          {"min_speedup", f.min_speedup ? json(*f.min_speedup) : json()},
          {"dedupe", f.dedupe}};
}

json schema_document() {
  return {
      {"trace_schema_version", kTraceSchemaVersion},
      {"documentation", "docs/traces.md"},
      {"reward",
       {{"rejected", score::kRewardRejected},
        {"other_not_correct", 0.0},
        {"correct", fmt::format("clip(ln speedup, {}, {})", score::kRewardMin, score::kRewardMax)},
        {"correct_without_speedup", nullptr},
        {"columns",
         {{"reward", "speedup vs eager PyTorch"},
          {"reward_compile", "speedup vs torch.compile"}}}}},
      {"code_hash",
       "FNV-1a 64 of the code with line endings as \\n, blank and #-comment "
       "lines dropped, trailing white space cut"},
      {"tables",
       {{"raw", schema_to_json(attempt_schema())},
        {"training_pairs_v1", schema_to_json(training_pairs_schema())},
        {"strategy_rewards_v1", schema_to_json(strategy_rewards_schema())},
        {"critic_accuracy_v1", schema_to_json(critic_accuracy_schema())}}}};
}

}  // namespace

namespace {

// raw/YYYY-MM/session_<id>: one file per session, its kept attempts in order.
util::Result<int> write_raw(const Staging& st, const std::vector<json>& rows,
                            const std::string& format, std::vector<std::string>& files) {
  int sessions = 0;
  for (size_t i = 0; i < rows.size();) {
    size_t j = i;
    while (j < rows.size() && rows[j]["session_id"] == rows[i]["session_id"]) ++j;
    std::vector<json> one(rows.begin() + static_cast<std::ptrdiff_t>(i),
                          rows.begin() + static_cast<std::ptrdiff_t>(j));
    std::string started = rows[i]["session_started_at"].get<std::string>();
    std::string month = started.size() >= 7 ? started.substr(0, 7) : "unknown";
    std::string stem = fmt::format("raw/{}/session_{}", file_safe(month),
                                   file_safe(rows[i]["session_id"].get<std::string>()));
    if (auto ok = write_table(st, stem, "raw", attempt_schema(), one, format, files); !ok)
      return std::unexpected(ok.error());
    ++sessions;
    i = j;
  }
  return sessions;
}

json stats_document(const ExportOptions& o, const Collected& c, const ExportSummary& s) {
  json verdicts = json::object();
  int public_rows = 0;
  for (const auto& r : c.rows) {
    std::string v = r["verdict"].get<std::string>();
    verdicts[v] = verdicts.value(v, 0) + 1;
    if (r["benchmark"].is_string()) ++public_rows;
  }
  auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  return {{"trace_schema_version", kTraceSchemaVersion},
          {"exported_at", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", now)},
          {"store", o.store_label},
          {"format", o.format},
          {"filters", filters_json(o.filters)},
          {"sessions_in_store", c.sessions_in_store},
          {"attempts_in_store", c.attempts_in_store},
          {"sessions", s.sessions},
          {"attempts", s.attempts},
          {"filtered_out", c.filtered_out},
          {"duplicates", c.duplicates},
          {"verdicts", verdicts},
          {"public_benchmark_attempts", public_rows},
          {"training_pairs", s.training_pairs},
          {"strategy_rewards", s.strategy_rows},
          {"critic_accuracy", s.critic_rows},
          {"files", s.files}};
}

}  // namespace

util::Result<ExportSummary> export_traces(store::Store& store, const ExportOptions& o) {
  if (auto ok = check_options(o); !ok) return std::unexpected(ok.error());
  auto c = collect(store, o.filters);
  if (!c) return std::unexpected(c.error());
  if (c->attempts_in_store == 0)
    return util::fail(ErrorKind::kBadInput, fmt::format("the store {} holds no attempts: nothing "
                                                        "to export",
                                                        store.path().string()));
  if (c->rows.empty())
    return util::fail(
        ErrorKind::kBadInput,
        fmt::format("none of the {} attempts in {} passes the filters ({} filtered "
                    "out, {} duplicates): nothing to export",
                    c->attempts_in_store, store.path().string(), c->filtered_out, c->duplicates));
  Staging st(o.out);
  if (auto ok = st.create(); !ok) return std::unexpected(ok.error());
  ExportSummary s;
  s.out = o.out;
  s.attempts = static_cast<int>(c->rows.size());
  s.attempts_in_store = c->attempts_in_store;
  s.filtered_out = c->filtered_out;
  s.duplicates = c->duplicates;
  auto sessions = write_raw(st, c->rows, o.format, s.files);
  if (!sessions) return std::unexpected(sessions.error());
  s.sessions = *sessions;
  auto pairs = training_pairs(c->rows, c->reference_source);
  auto strategies = strategy_rewards(c->session_rows);
  auto critic = critic_accuracy(c->session_rows);
  s.training_pairs = static_cast<int>(pairs.size());
  s.strategy_rows = static_cast<int>(strategies.size());
  s.critic_rows = static_cast<int>(critic.size());
  struct Table {
    const char* name;
    const Schema& schema;
    const std::vector<json>& rows;
  };
  for (const Table& t : {Table{"training_pairs_v1", training_pairs_schema(), pairs},
                         Table{"strategy_rewards_v1", strategy_rewards_schema(), strategies},
                         Table{"critic_accuracy_v1", critic_accuracy_schema(), critic}})
    if (auto ok = write_table(st, std::string("processed/") + t.name, t.name, t.schema, t.rows,
                              o.format, s.files);
        !ok)
      return std::unexpected(ok.error());
  s.files.push_back("metadata/schema.json");
  s.files.push_back("metadata/stats.json");
  std::sort(s.files.begin(), s.files.end());
  if (auto ok =
          write_text(st.dir() / "metadata" / "schema.json", dump(schema_document(), 2) + "\n");
      !ok)
    return std::unexpected(ok.error());
  // stats.json last: its presence marks a finished export.
  if (auto ok = write_text(st.dir() / "metadata" / "stats.json",
                           dump(stats_document(o, *c, s), 2) + "\n");
      !ok)
    return std::unexpected(ok.error());
  if (auto ok = st.commit(); !ok) return std::unexpected(ok.error());
  return s;
}

}  // namespace ok::traces
