// Reads sessions and attempts with SQL of its own through Store::db(): the store has no query for
// every session of a file, and these reads are the charts' alone.
#include "charts/inputs.hpp"

#include <fmt/core.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "score/tsv.hpp"
#include "store/store.hpp"
#include "util/paths.hpp"

namespace ok::charts {

namespace fs = std::filesystem;
using nlohmann::json;
using util::ErrorKind;
using util::fail;

namespace {

json read_json(const fs::path& p) {
  auto text = util::read_file(p);
  if (!text) return nullptr;
  return json::parse(*text, nullptr, false);
}

std::string report_device(const fs::path& dir) {
  if (dir.empty()) return "";
  json r = read_json(dir / "report.json");
  return r.is_object() && r.contains("device") && r["device"].is_string()
             ? r["device"].get<std::string>()
             : "";
}

struct Session {
  std::string id, updated_at;
  fs::path out_dir;
  Problem problem;
};

int option_int(const json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_number_integer() ? o[key].get<int>() : 0;
}

util::Result<std::vector<Attempt>> session_attempts(store::Store& st, const std::string& id,
                                                    std::optional<double>& eager_us,
                                                    std::string& device) {
  auto q = st.db().prepare(
      "SELECT a.number, a.verdict, a.correct, a.speedup, a.runtime_us, a.cost_usd, a.wall_s, "
      "e.ref_runtime_median_us, e.device FROM attempts a LEFT JOIN evaluations e ON "
      "e.id = a.evaluation_id WHERE a.session = ?1 ORDER BY a.number");
  if (!q) return std::unexpected(q.error());
  q->bind(1, id);
  std::vector<Attempt> out;
  std::optional<double> best;
  for (;;) {
    auto more = q->step();
    if (!more) return std::unexpected(more.error());
    if (!*more) return out;
    auto num = [&](int i) {
      return q->col_null(i) ? std::nullopt : std::optional(q->col_double(i));
    };
    Attempt a{.number = static_cast<int>(q->col_int(0)),
              .verdict = q->col_text(1),
              .correct = q->col_int(2) != 0,
              .speedup = num(3),
              .runtime_us = num(4),
              .cost_usd = q->col_double(5),
              .wall_s = q->col_double(6)};
    if (!q->col_null(8) && device.empty()) device = q->col_text(8);
    // The eager time of the best attempt's own evaluation, as the session report gives it.
    if (a.correct && a.speedup && (!best || *a.speedup > *best)) {
      best = a.speedup;
      eager_us = num(7);
    }
    out.push_back(std::move(a));
  }
}

util::Result<std::vector<Session>> read_sessions(const fs::path& path,
                                                 const std::string& hardware) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return fail(ErrorKind::kBadInput, fmt::format("{}: no such store", path.string()));
  auto st = store::Store::open(path);
  if (!st) return std::unexpected(st.error());
  if (auto r = st->db().exec("PRAGMA query_only = ON"); !r) return std::unexpected(r.error());
  auto q = st->db().prepare(
      "SELECT id, name, backend, model, options, out_dir, compile_runtime_us, cost_usd, "
      "updated_at FROM sessions ORDER BY created_at, id");
  if (!q) return std::unexpected(q.error());
  auto sessions = q->rows([](const store::Statement& r) {
    Session s{.id = r.col_text(0), .updated_at = r.col_text(8), .out_dir = r.col_text(5)};
    json o = json::parse(r.col_text(4), nullptr, false);
    s.problem.row.level = option_int(o, "level");
    s.problem.row.problem_id = option_int(o, "number");
    s.problem.row.name = r.col_text(1);
    s.problem.row.backend = r.col_text(2);
    s.problem.row.model = r.col_text(3);
    if (!r.col_null(6)) s.problem.row.compile_us = r.col_double(6);
    s.problem.row.cost_usd = r.col_double(7);
    return s;
  });
  if (!sessions) return std::unexpected(sessions.error());
  int unnumbered = 0;
  for (auto& s : *sessions) {
    Problem& p = s.problem;
    if (p.row.level == 0) p.row.problem_id = ++unnumbered;  // a reference outside KernelBench
    std::string recorded;
    auto attempts = session_attempts(*st, s.id, p.row.eager_us, recorded);
    if (!attempts)
      return fail(ErrorKind::kBadInput,
                  fmt::format("{}: session {}: {}", path.string(), s.id, attempts.error().message));
    p.attempts = std::move(*attempts);
    auto final_row = rows_after({p}, static_cast<int>(p.attempts.size()));
    if (!final_row.empty()) p.row = final_row.front();
    p.row.attempts = static_cast<int>(p.attempts.size());
    p.device = report_device(s.out_dir);
    if (p.device.empty()) p.device = recorded == "cpu" || hardware.empty() ? recorded : hardware;
  }
  return std::move(*sessions);
}

// The task folders of a sweep's TSV by (level, problem): results/l1.tsv -> results/l1/L1_019_ReLU.
std::map<std::pair<int, int>, fs::path> task_dirs(const fs::path& tsv) {
  static const std::regex kTaskDir(R"(L(\d+)_(\d+)_(.+))");
  std::map<std::pair<int, int>, fs::path> out;
  fs::path work = tsv;
  work.replace_extension();
  if (work == tsv) work += ".d";
  std::error_code ec;
  if (!fs::is_directory(work, ec)) return out;
  for (const auto& e : fs::directory_iterator(work, ec)) {
    std::smatch m;
    std::string name = e.path().filename().string();
    if (e.is_directory() && std::regex_match(name, m, kTaskDir))
      out[{std::stoi(m[1].str()), std::stoi(m[2].str())}] = e.path();
  }
  return out;
}

std::string session_file(const fs::path& dir) {
  auto text = util::read_file(dir / "session");
  if (!text) return "";
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// Gives `p` the attempts of its session when a store holds it; marks the session claimed.
void attach(Problem& p, const std::string& session_id, std::vector<std::vector<Session>>& stores,
            std::vector<std::vector<bool>>& claimed) {
  const Session* found = nullptr;
  std::pair<size_t, size_t> at;
  for (size_t d = 0; d < stores.size(); ++d)
    for (size_t i = 0; i < stores[d].size(); ++i) {
      const Session& s = stores[d][i];
      const auto& r = s.problem.row;
      // Without the task folder's session id, the same problem, backend, model and attempt
      // count: another session of the problem (a landscape, an earlier run) is not this row's.
      bool match = !session_id.empty()
                       ? s.id == session_id
                       : r.level == p.row.level && r.problem_id == p.row.problem_id &&
                             r.backend == p.row.backend && r.model == p.row.model &&
                             p.row.attempts == static_cast<int>(s.problem.attempts.size());
      if (match && (!found || s.updated_at >= found->updated_at)) {
        found = &s;
        at = {d, i};
      }
    }
  if (!found) return;
  claimed[at.first][at.second] = true;
  p.attempts = found->problem.attempts;
  if (p.device.empty()) p.device = found->problem.device;
}

}  // namespace

util::Result<std::vector<Problem>> store_problems(const fs::path& db, const std::string& hardware) {
  auto sessions = read_sessions(db, hardware);
  if (!sessions) return std::unexpected(sessions.error());
  std::vector<Problem> out;
  for (auto& s : *sessions) out.push_back(std::move(s.problem));
  return out;
}

util::Result<Inputs> load_inputs(const Sources& sources) {
  Inputs in;
  if (!sources.baselines.empty()) {
    auto published = score::load_published(sources.baselines);
    if (!published) return std::unexpected(published.error());
    in.published = std::move(*published);
  }
  std::vector<std::vector<Session>> stores;
  std::vector<std::vector<bool>> claimed;
  for (const auto& db : sources.dbs) {
    auto s = read_sessions(db, sources.hardware);
    if (!s) return std::unexpected(s.error());
    claimed.emplace_back(s->size(), false);
    stores.push_back(std::move(*s));
  }
  for (const auto& tsv : sources.tsvs) {
    auto rows = score::read_tsv(tsv);
    if (!rows) return std::unexpected(rows.error());
    auto dirs = task_dirs(tsv);
    Run run{.label = tsv.filename().string(), .source = tsv.string()};
    for (auto& row : *rows) {
      Problem p{.row = std::move(row)};
      auto dir = dirs.find({p.row.level, p.row.problem_id});
      fs::path folder = dir == dirs.end() ? fs::path() : dir->second;
      p.device = p.row.device.empty() ? report_device(folder) : p.row.device;
      attach(p, folder.empty() ? "" : session_file(folder), stores, claimed);
      if (p.device.empty()) p.device = sources.hardware;
      run.problems.push_back(std::move(p));
    }
    in.runs.push_back(std::move(run));
  }
  for (size_t d = 0; d < stores.size(); ++d) {
    Run run{.label = sources.dbs[d].filename().string(), .source = sources.dbs[d].string()};
    for (size_t i = 0; i < stores[d].size(); ++i)
      if (!claimed[d][i]) run.problems.push_back(std::move(stores[d][i].problem));
    if (!run.problems.empty()) in.runs.push_back(std::move(run));
  }
  if (in.runs.empty())
    return fail(ErrorKind::kBadInput, "no results: give a results TSV or a store with sessions");
  return in;
}

}  // namespace ok::charts
