// The skill library's statements (version 7; docs/store.md): skills and their evidence.
#include <fmt/core.h>

#include "store/store.hpp"

namespace ok::store {

namespace {

constexpr const char* kEvidenceColumns =
    "skill_id, session, role, outcome, rank, attempt, speedup_before, speedup_after, hardware, "
    "created_at";

SkillEvidenceRow read_evidence(const Statement& row) {
  SkillEvidenceRow e;
  e.skill_id = row.col_text(0);
  e.session = row.col_text(1);
  e.role = row.col_text(2);
  e.outcome = row.col_text(3);
  e.rank = static_cast<int>(row.col_int(4));
  if (!row.col_null(5)) e.attempt = row.col_int(5);
  if (!row.col_null(6)) e.speedup_before = row.col_double(6);
  if (!row.col_null(7)) e.speedup_after = row.col_double(7);
  e.hardware = row.col_text(8);
  e.created_at = row.col_text(9);
  return e;
}

}  // namespace

util::Result<bool> Store::insert_skill(const SkillRow& s) {
  auto st = db_.prepare(
      "INSERT INTO skills(id, kind, provenance, signature, title, text, action, created_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, COALESCE(?8, strftime('%Y-%m-%dT%H:%M:%fZ','now'))) "
      "ON CONFLICT(id) DO NOTHING");
  if (!st) return std::unexpected(st.error());
  st->bind(1, s.id).bind(2, s.kind).bind(3, s.provenance).bind(4, s.signature_json);
  st->bind(5, s.title).bind(6, s.text).bind(7, s.action_json);
  st->bind_text_or_null(8, s.created_at);
  if (auto r = st->run(); !r) return std::unexpected(r.error());
  return sqlite3_changes(db_.raw()) > 0;
}

util::Result<std::vector<SkillRow>> Store::skill_rows() {
  auto st = db_.prepare(
      "SELECT id, kind, provenance, signature, title, text, action, created_at FROM skills "
      "ORDER BY created_at, id");
  if (!st) return std::unexpected(st.error());
  return st->rows([](const Statement& row) {
    return SkillRow{.id = row.col_text(0),
                    .kind = row.col_text(1),
                    .provenance = row.col_text(2),
                    .signature_json = row.col_text(3),
                    .title = row.col_text(4),
                    .text = row.col_text(5),
                    .action_json = row.col_text(6),
                    .created_at = row.col_text(7)};
  });
}

util::Result<void> Store::put_skill_evidence(const SkillEvidenceRow& e) {
  auto st = db_.prepare(fmt::format(
      "INSERT INTO skill_evidence({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
      "COALESCE(?10, strftime('%Y-%m-%dT%H:%M:%fZ','now'))) ON CONFLICT(skill_id, session) DO "
      "UPDATE SET role = excluded.role, outcome = excluded.outcome, rank = excluded.rank, "
      "attempt = excluded.attempt, speedup_before = excluded.speedup_before, speedup_after = "
      "excluded.speedup_after, hardware = excluded.hardware",
      kEvidenceColumns));
  if (!st) return std::unexpected(st.error());
  st->bind(1, e.skill_id).bind(2, e.session).bind(3, e.role).bind(4, e.outcome);
  st->bind(5, int64_t{e.rank});
  st->bind_or_null(6, e.attempt);
  st->bind(7, e.speedup_before).bind(8, e.speedup_after).bind(9, e.hardware);
  st->bind_text_or_null(10, e.created_at);
  return st->run();
}

util::Result<std::vector<SkillEvidenceRow>> Store::skill_evidence(const std::string& skill_id,
                                                                  const std::string& session) {
  auto st = db_.prepare(fmt::format(
      "SELECT {} FROM skill_evidence WHERE (?1 = '' OR skill_id = ?1) AND (?2 = '' OR session = "
      "?2) ORDER BY created_at, id",
      kEvidenceColumns));
  if (!st) return std::unexpected(st.error());
  st->bind(1, skill_id).bind(2, session);
  return st->rows(read_evidence);
}

util::Result<int> Store::delete_skills(const std::vector<std::string>& ids) {
  int n = 0;
  auto r = transaction([&]() -> util::Result<void> {
    for (const auto& id : ids) {
      auto ev = db_.prepare("DELETE FROM skill_evidence WHERE skill_id = ?1");
      if (!ev) return std::unexpected(ev.error());
      ev->bind(1, id);
      if (auto w = ev->run(); !w) return w;
      auto st = db_.prepare("DELETE FROM skills WHERE id = ?1");
      if (!st) return std::unexpected(st.error());
      st->bind(1, id);
      if (auto w = st->run(); !w) return w;
      n += sqlite3_changes(db_.raw());
    }
    return {};
  });
  if (!r) return std::unexpected(r.error());
  return n;
}

}  // namespace ok::store
