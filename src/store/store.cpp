#include "store/store.hpp"

#include <fmt/core.h>

#include <chrono>
#include <thread>

#include "store/migrations.hpp"
#include "store/rows.hpp"
#include "util/paths.hpp"

namespace ok::store {

std::filesystem::path Store::default_path() {
  return util::data_dir() / "openkernel.db";
}

util::Result<Store> Store::open(const std::filesystem::path& path) {
  // Processes creating the same new database at once can see SQLITE_BUSY where SQLite does not
  // call the busy handler (switching to WAL, lock upgrades): retry those for a few seconds.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int attempt = 0;; ++attempt) {
    auto db = Database::open(path);
    util::Result<int> m = db ? migrate(*db) : util::Result<int>(std::unexpected(db.error()));
    if (m) return Store(std::move(*db), path);
    bool busy = m.error().message.find("locked") != std::string::npos ||
                m.error().message.find("busy") != std::string::npos;
    if (!busy || std::chrono::steady_clock::now() > deadline) return std::unexpected(m.error());
    std::this_thread::sleep_for(std::chrono::milliseconds(10 + 10 * std::min(attempt, 10)));
  }
}

util::Result<int64_t> Store::upsert_problem(const ProblemRow& p) {
  auto st = db_.prepare(
      "INSERT INTO problems(source_hash, name, path, level, problem_number, source) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(source_hash) DO UPDATE SET name=excluded.name "
      "RETURNING id");
  if (!st) return std::unexpected(st.error());
  st->bind(1, p.source_hash).bind(2, p.name).bind(3, p.path);
  st->bind_or_null(4, p.level);
  st->bind_or_null(5, p.problem_number);
  st->bind(6, p.source);
  return st->step_int();
}

util::Result<int64_t> Store::upsert_candidate(const CandidateRow& c) {
  auto st = db_.prepare(
      "INSERT INTO candidates(source_hash, source, path) VALUES (?1, ?2, ?3) "
      "ON CONFLICT(source_hash) DO UPDATE SET path=excluded.path RETURNING id");
  if (!st) return std::unexpected(st.error());
  st->bind(1, c.source_hash).bind(2, c.source).bind(3, c.path);
  return st->step_int();
}

util::Result<int64_t> Store::insert_evaluation(const EvaluationRow& e) {
  auto st = db_.prepare(
      "INSERT INTO evaluations(problem_id, candidate_id, session, verdict, compiled, correct, "
      "valid, speedup, runtime_median_us, ref_runtime_median_us, max_abs_error, max_rel_error, "
      "backend, device, flags, reasons, overrides, versions, result, wall_s) VALUES "
      "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20)");
  if (!st) return std::unexpected(st.error());
  st->bind(1, e.problem_id).bind(2, e.candidate_id);
  st->bind_or_null(3, e.session);
  st->bind(4, e.verdict)
      .bind(5, int64_t{e.compiled})
      .bind(6, int64_t{e.correct})
      .bind(7, int64_t{e.valid})
      .bind(8, e.speedup)
      .bind(9, e.runtime_median_us)
      .bind(10, e.ref_runtime_median_us)
      .bind(11, e.max_abs_error)
      .bind(12, e.max_rel_error)
      .bind(13, e.backend)
      .bind(14, e.device)
      .bind(15, e.flags_json)
      .bind(16, e.reasons_json)
      .bind(17, e.overrides_json)
      .bind(18, e.versions_json)
      .bind(19, e.result_json)
      .bind(20, e.wall_s);
  if (auto r = st->run(); !r) return std::unexpected(r.error());
  return db_.last_insert_id();
}

util::Result<int64_t> Store::count_evaluations() {
  auto st = db_.prepare("SELECT COUNT(*) FROM evaluations");
  if (!st) return std::unexpected(st.error());
  return st->step_int();
}

util::Result<void> Store::insert_session(const SessionRow& s) {
  auto st = db_.prepare(
      "INSERT INTO sessions(id, problem_id, reference, name, backend, model, mode, status, "
      "options, out_dir, best_attempt, best_speedup, compile_runtime_us, cost_usd) VALUES "
      "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)");
  if (!st) return std::unexpected(st.error());
  st->bind(1, s.id);
  st->bind_or_null(2, s.problem_id);
  st->bind(3, s.reference).bind(4, s.name).bind(5, s.backend).bind(6, s.model).bind(7, s.mode);
  st->bind(8, s.status).bind(9, s.options_json).bind(10, s.out_dir);
  st->bind_or_null(11, s.best_attempt);
  st->bind(12, s.best_speedup).bind(13, s.compile_runtime_us).bind(14, s.cost_usd);
  return st->run();
}

util::Result<void> Store::update_session(const SessionRow& s) {
  auto st = db_.prepare(
      "UPDATE sessions SET status=?2, best_attempt=?3, best_speedup=?4, compile_runtime_us=?5, "
      "cost_usd=?6, updated_at=strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id=?1");
  if (!st) return std::unexpected(st.error());
  st->bind(1, s.id).bind(2, s.status);
  st->bind_or_null(3, s.best_attempt);
  st->bind(4, s.best_speedup).bind(5, s.compile_runtime_us).bind(6, s.cost_usd);
  return st->run();
}

util::Result<std::optional<SessionRow>> Store::find_session(const std::string& id) {
  auto st = db_.prepare(
      "SELECT id, problem_id, reference, name, backend, model, mode, status, options, out_dir, "
      "best_attempt, best_speedup, compile_runtime_us, cost_usd FROM sessions WHERE id=?1");
  if (!st) return std::unexpected(st.error());
  st->bind(1, id);
  return st->first_row(session_from_row);
}

SessionRow session_from_row(const Statement& row) {
  SessionRow s;
  s.id = row.col_text(0);
  s.problem_id = opt_int(row, 1);
  s.reference = row.col_text(2);
  s.name = row.col_text(3);
  s.backend = row.col_text(4);
  s.model = row.col_text(5);
  s.mode = row.col_text(6);
  s.status = row.col_text(7);
  s.options_json = row.col_text(8);
  s.out_dir = row.col_text(9);
  s.best_attempt = opt_int(row, 10);
  s.best_speedup = opt_double(row, 11);
  s.compile_runtime_us = opt_double(row, 12);
  s.cost_usd = row.col_double(13);
  return s;
}

util::Result<std::vector<SessionSummary>> Store::sessions(int limit) {
  auto st = db_.prepare(
      "SELECT s.id, s.name, s.backend, s.model, s.mode, s.status, s.created_at, s.updated_at, "
      "(SELECT COUNT(*) FROM attempts a WHERE a.session = s.id), s.best_speedup, s.cost_usd, "
      "s.out_dir FROM sessions s ORDER BY s.created_at DESC, s.rowid DESC LIMIT ?1");
  if (!st) return std::unexpected(st.error());
  st->bind(1, int64_t{limit > 0 ? limit : -1});  // SQLite: a negative LIMIT is none
  return st->rows([](const Statement& row) {
    SessionSummary s;
    s.id = row.col_text(0);
    s.problem = row.col_text(1);
    s.backend = row.col_text(2);
    s.model = row.col_text(3);
    s.mode = row.col_text(4);
    s.status = row.col_text(5);
    s.started_at = row.col_text(6);
    s.updated_at = row.col_text(7);
    s.attempts = static_cast<int>(row.col_int(8));
    s.best_speedup = opt_double(row, 9);
    s.cost_usd = row.col_double(10);
    s.out_dir = row.col_text(11);
    return s;
  });
}

util::Result<int64_t> Store::insert_attempt(const AttemptRow& a) {
  auto st = db_.prepare(
      "INSERT INTO attempts(session, number, generator, candidate_id, evaluation_id, path, "
      "verdict, correct, speedup, runtime_us, error, cost_usd, params, description, diagnosis, "
      "wall_s) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)");
  if (!st) return std::unexpected(st.error());
  st->bind(1, a.session).bind(2, int64_t{a.number}).bind(3, a.generator);
  st->bind_or_null(4, a.candidate_id);
  st->bind_or_null(5, a.evaluation_id);
  st->bind(6, a.path).bind(7, a.verdict).bind(8, int64_t{a.correct});
  st->bind(9, a.speedup).bind(10, a.runtime_us).bind(11, a.error).bind(12, a.cost_usd);
  st->bind(13, a.params_json).bind(14, a.description);
  st->bind_text_or_null(15, a.diagnosis_json);
  st->bind(16, a.wall_s);
  if (auto r = st->run(); !r) return std::unexpected(r.error());
  return db_.last_insert_id();
}

util::Result<void> Store::update_attempt_diagnosis(const std::string& session, int number,
                                                   const std::string& diagnosis_json,
                                                   double cost_usd, double wall_s) {
  auto st = db_.prepare(
      "UPDATE attempts SET diagnosis = ?3, cost_usd = ?4, wall_s = ?5 WHERE session = ?1 AND "
      "number = ?2");
  if (!st) return std::unexpected(st.error());
  st->bind(1, session).bind(2, int64_t{number});
  st->bind_text_or_null(3, diagnosis_json);
  st->bind(4, cost_usd).bind(5, wall_s);
  if (auto r = st->run(); !r) return std::unexpected(r.error());
  return {};
}

util::Result<std::vector<AttemptRow>> Store::attempts(const std::string& session) {
  auto st = db_.prepare(
      "SELECT session, number, generator, candidate_id, evaluation_id, path, verdict, correct, "
      "speedup, runtime_us, error, cost_usd, params, description, diagnosis, wall_s "
      "FROM attempts WHERE session=?1 ORDER BY number");
  if (!st) return std::unexpected(st.error());
  st->bind(1, session);
  return st->rows([](const Statement& row) {
    AttemptRow a;
    a.session = row.col_text(0);
    a.number = static_cast<int>(row.col_int(1));
    a.generator = row.col_text(2);
    a.candidate_id = opt_int(row, 3);
    a.evaluation_id = opt_int(row, 4);
    a.path = row.col_text(5);
    a.verdict = row.col_text(6);
    a.correct = row.col_int(7) != 0;
    a.speedup = opt_double(row, 8);
    a.runtime_us = opt_double(row, 9);
    a.error = row.col_text(10);
    a.cost_usd = row.col_double(11);
    a.params_json = row.col_text(12);
    a.description = row.col_text(13);
    a.diagnosis_json = row.col_null(14) ? "" : row.col_text(14);
    a.wall_s = row.col_double(15);
    return a;
  });
}

util::Result<std::optional<std::string>> Store::evaluation_result(int64_t id) {
  auto st = db_.prepare("SELECT result FROM evaluations WHERE id = ?1");
  if (!st) return std::unexpected(st.error());
  st->bind(1, id);
  return st->first_row([](const Statement& row) { return row.col_text(0); });
}

util::Result<void> Store::update_evaluation_profile(int64_t id, const std::string& profile_json) {
  auto st = db_.prepare(
      "UPDATE evaluations SET result = json_set(result, '$.profile', json(?2)) WHERE id = ?1");
  if (!st) return std::unexpected(st.error());
  st->bind(1, id).bind(2, profile_json);
  if (auto r = st->run(); !r) return std::unexpected(r.error());
  return {};
}

util::Result<void> Store::transaction(const std::function<util::Result<void>()>& body) {
  if (auto r = db_.exec("BEGIN IMMEDIATE"); !r) return r;
  auto r = body();
  if (r) r = db_.exec("COMMIT");
  if (!r) (void)db_.exec("ROLLBACK");
  return r;
}

util::Result<int> Store::merge_sessions(const std::filesystem::path& other) {
  {
    auto src = Store::open(other);  // brings it to this schema version
    if (!src) return std::unexpected(src.error());
  }
  {
    auto st = db_.prepare("ATTACH DATABASE ?1 AS src");
    if (!st) return std::unexpected(st.error());
    st->bind(1, other.string());
    if (auto r = st->run(); !r) return std::unexpected(r.error());
  }
  auto detach = [this] { (void)db_.exec("DETACH DATABASE src"); };
  if (auto r = db_.exec("BEGIN IMMEDIATE"); !r) {
    detach();
    return std::unexpected(r.error());
  }
  auto abort = [&](util::Error e) -> util::Result<int> {
    (void)db_.exec("ROLLBACK");
    detach();
    return std::unexpected(std::move(e));
  };
  // Evaluations keep their order and get ids above this store's, so attempts map by offset.
  int64_t offset = 0;
  {
    auto st = db_.prepare("SELECT COALESCE(MAX(id), 0) FROM main.evaluations");
    if (!st) return abort(st.error());
    if (auto r = st->step(); !r) return abort(r.error());
    offset = st->col_int(0);
  }
  constexpr const char* kMapProblem =
      "(SELECT m.id FROM main.problems m JOIN src.problems p ON p.source_hash = m.source_hash "
      "WHERE p.id = {})";
  constexpr const char* kMapCandidate =
      "(SELECT m.id FROM main.candidates m JOIN src.candidates c ON c.source_hash = "
      "m.source_hash WHERE c.id = {})";
  const std::string sessions = "(SELECT id FROM src.sessions)";
  const std::string sql = fmt::format(
      "DELETE FROM main.attempts WHERE session IN {s};"
      "DELETE FROM main.evaluations WHERE session IN {s};"
      "DELETE FROM main.llm_calls WHERE session IN {s};"
      "DELETE FROM main.search_state WHERE scope IN {s};"
      "DELETE FROM main.events WHERE session IN {s};"
      "DELETE FROM main.sessions WHERE id IN {s};"
      "INSERT OR IGNORE INTO main.problems(source_hash, name, path, level, problem_number, "
      "source, created_at) SELECT source_hash, name, path, level, problem_number, source, "
      "created_at FROM src.problems;"
      "INSERT OR IGNORE INTO main.candidates(source_hash, source, path, created_at) "
      "SELECT source_hash, source, path, created_at FROM src.candidates;"
      "INSERT INTO main.evaluations(id, problem_id, candidate_id, session, verdict, compiled, "
      "correct, valid, speedup, runtime_median_us, ref_runtime_median_us, max_abs_error, "
      "max_rel_error, backend, device, flags, reasons, overrides, versions, result, wall_s, "
      "created_at) SELECT e.id + {off}, {p}, {c}, e.session, e.verdict, e.compiled, e.correct, "
      "e.valid, e.speedup, e.runtime_median_us, e.ref_runtime_median_us, e.max_abs_error, "
      "e.max_rel_error, e.backend, e.device, e.flags, e.reasons, e.overrides, e.versions, "
      "e.result, e.wall_s, e.created_at FROM src.evaluations e WHERE e.session IN {s};"
      "INSERT INTO main.sessions(id, problem_id, reference, name, backend, model, mode, status, "
      "options, out_dir, best_attempt, best_speedup, compile_runtime_us, cost_usd, created_at, "
      "updated_at) SELECT x.id, {px}, x.reference, x.name, x.backend, x.model, x.mode, "
      "x.status, x.options, x.out_dir, x.best_attempt, x.best_speedup, x.compile_runtime_us, "
      "x.cost_usd, x.created_at, x.updated_at FROM src.sessions x;"
      "INSERT INTO main.attempts(session, number, generator, candidate_id, evaluation_id, path, "
      "verdict, correct, speedup, runtime_us, error, cost_usd, params, description, diagnosis, "
      "wall_s, created_at) SELECT a.session, a.number, a.generator, {ca}, a.evaluation_id + "
      "{off}, a.path, a.verdict, a.correct, a.speedup, a.runtime_us, a.error, a.cost_usd, "
      "a.params, a.description, a.diagnosis, a.wall_s, a.created_at FROM src.attempts a;"
      "INSERT INTO main.llm_calls(session, purpose, provider, model, base_url, stream, request, "
      "response, stop_reason, status, error_kind, error, http_status, attempts, input_tokens, "
      "output_tokens, cached_input_tokens, usage_estimated, cost_usd, cost_estimated, "
      "latency_ms, ttft_ms, started_at, created_at) SELECT session, purpose, provider, model, "
      "base_url, stream, request, response, stop_reason, status, error_kind, error, "
      "http_status, attempts, input_tokens, output_tokens, cached_input_tokens, "
      "usage_estimated, cost_usd, cost_estimated, latency_ms, ttft_ms, started_at, created_at "
      "FROM src.llm_calls WHERE session IN {s};"
      "INSERT INTO main.search_state(scope, kind, json, updated_at) SELECT scope, kind, json, "
      "updated_at FROM src.search_state WHERE scope IN {s};"
      "INSERT INTO main.events(session, time, kind, number, total, text, payload) SELECT "
      "session, time, kind, number, total, text, payload FROM src.events WHERE session IN {s} "
      "ORDER BY id;"
      "INSERT OR IGNORE INTO main.skills(id, kind, provenance, signature, title, text, action, "
      "created_at) SELECT id, kind, provenance, signature, title, text, action, created_at FROM "
      "src.skills;"
      "INSERT INTO main.skill_evidence(skill_id, session, role, outcome, rank, attempt, "
      "speedup_before, speedup_after, hardware, created_at) SELECT skill_id, session, role, "
      "outcome, rank, attempt, speedup_before, speedup_after, hardware, created_at FROM "
      "src.skill_evidence WHERE true ON CONFLICT(skill_id, session) DO UPDATE SET role = "
      "excluded.role, outcome = excluded.outcome, rank = excluded.rank, attempt = "
      "excluded.attempt, speedup_before = excluded.speedup_before, speedup_after = "
      "excluded.speedup_after, hardware = excluded.hardware;",
      fmt::arg("s", sessions), fmt::arg("off", offset),
      fmt::arg("p", fmt::format(fmt::runtime(kMapProblem), "e.problem_id")),
      fmt::arg("c", fmt::format(fmt::runtime(kMapCandidate), "e.candidate_id")),
      fmt::arg("px", fmt::format(fmt::runtime(kMapProblem), "x.problem_id")),
      fmt::arg("ca", fmt::format(fmt::runtime(kMapCandidate), "a.candidate_id")));
  if (auto r = db_.exec(sql); !r) return abort(r.error());
  int count = 0;
  {
    auto st = db_.prepare("SELECT COUNT(*) FROM src.sessions");
    if (!st) return abort(st.error());
    if (auto r = st->step(); !r) return abort(r.error());
    count = static_cast<int>(st->col_int(0));
  }
  if (auto r = db_.exec("COMMIT"); !r) return abort(r.error());
  detach();
  return count;
}

util::Result<int64_t> Store::insert_baseline(const BaselineRow& b) {
  auto st = db_.prepare(
      "INSERT INTO baselines(problem_id, device, backend, method, eager_us, compile_us, "
      "compile_reason, threads, versions, result) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)");
  if (!st) return std::unexpected(st.error());
  st->bind(1, b.problem_id)
      .bind(2, b.device)
      .bind(3, b.backend)
      .bind(4, b.method)
      .bind(5, b.eager_us)
      .bind(6, b.compile_us)
      .bind(7, b.compile_reason)
      .bind(8, int64_t{b.threads})
      .bind(9, b.versions_json)
      .bind(10, b.result_json);
  if (auto r = st->run(); !r) return std::unexpected(r.error());
  return db_.last_insert_id();
}

util::Result<std::optional<BaselineRow>> Store::latest_baseline(const std::string& source_hash,
                                                                const std::string& device,
                                                                const std::string& backend) {
  auto st = db_.prepare(
      "SELECT b.problem_id, b.device, b.backend, b.method, b.eager_us, b.compile_us, "
      "b.compile_reason, b.threads, b.versions, b.result FROM baselines b JOIN problems p ON "
      "p.id = b.problem_id WHERE p.source_hash = ?1 AND b.device = ?2 AND b.backend = ?3 "
      "ORDER BY b.id DESC LIMIT 1");
  if (!st) return std::unexpected(st.error());
  st->bind(1, source_hash).bind(2, device).bind(3, backend);
  return st->first_row([](const Statement& row) {
    BaselineRow b;
    b.problem_id = row.col_int(0);
    b.device = row.col_text(1);
    b.backend = row.col_text(2);
    b.method = row.col_text(3);
    if (!row.col_null(4)) b.eager_us = row.col_double(4);
    if (!row.col_null(5)) b.compile_us = row.col_double(5);
    b.compile_reason = row.col_text(6);
    b.threads = static_cast<int>(row.col_int(7));
    b.versions_json = row.col_text(8);
    b.result_json = row.col_text(9);
    return b;
  });
}

util::Result<void> Store::put_search_state(const std::string& scope, const std::string& kind,
                                           const std::string& json_text) {
  auto st = db_.prepare(
      "INSERT INTO search_state(scope, kind, json) VALUES (?1, ?2, ?3) ON CONFLICT(scope, kind) "
      "DO UPDATE SET json = excluded.json, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')");
  if (!st) return std::unexpected(st.error());
  st->bind(1, scope).bind(2, kind).bind(3, json_text);
  if (auto r = st->run(); !r) return std::unexpected(r.error());
  return {};
}

util::Result<std::optional<std::string>> Store::search_state(const std::string& scope,
                                                             const std::string& kind) {
  auto st = db_.prepare("SELECT json FROM search_state WHERE scope = ?1 AND kind = ?2");
  if (!st) return std::unexpected(st.error());
  st->bind(1, scope).bind(2, kind);
  return st->first_row([](const Statement& row) { return row.col_text(0); });
}

}  // namespace ok::store
