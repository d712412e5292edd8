#include "store/store.hpp"

#include <chrono>
#include <thread>

#include "store/migrations.hpp"
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
  p.level ? st->bind(4, int64_t{*p.level}) : st->bind_null(4);
  p.problem_number ? st->bind(5, int64_t{*p.problem_number}) : st->bind_null(5);
  st->bind(6, p.source);
  auto r = st->step();
  if (!r) return std::unexpected(r.error());
  return st->col_int(0);
}

util::Result<int64_t> Store::upsert_candidate(const CandidateRow& c) {
  auto st = db_.prepare(
      "INSERT INTO candidates(source_hash, source, path) VALUES (?1, ?2, ?3) "
      "ON CONFLICT(source_hash) DO UPDATE SET path=excluded.path RETURNING id");
  if (!st) return std::unexpected(st.error());
  st->bind(1, c.source_hash).bind(2, c.source).bind(3, c.path);
  auto r = st->step();
  if (!r) return std::unexpected(r.error());
  return st->col_int(0);
}

util::Result<int64_t> Store::insert_evaluation(const EvaluationRow& e) {
  auto st = db_.prepare(
      "INSERT INTO evaluations(problem_id, candidate_id, session, verdict, compiled, correct, "
      "valid, speedup, runtime_median_us, ref_runtime_median_us, max_abs_error, max_rel_error, "
      "backend, device, flags, reasons, overrides, versions, result, wall_s) VALUES "
      "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20)");
  if (!st) return std::unexpected(st.error());
  st->bind(1, e.problem_id).bind(2, e.candidate_id);
  e.session ? st->bind(3, *e.session) : st->bind_null(3);
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
  if (auto r = st->step(); !r) return std::unexpected(r.error());
  return st->col_int(0);
}

}  // namespace ok::store
