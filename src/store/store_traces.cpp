// The trace export's reads (docs/traces.md): sessions with their problem, intent tree and
// device name; candidates' sources; a session's LLM calls.
#include "store/rows.hpp"
#include "store/store.hpp"

namespace ok::store {

util::Result<std::vector<TraceSessionRow>> Store::trace_sessions() {
  auto st = db_.prepare(
      "SELECT s.id, s.problem_id, s.reference, s.name, s.backend, s.model, s.mode, s.status, "
      "s.options, s.out_dir, s.best_attempt, s.best_speedup, s.compile_runtime_us, s.cost_usd, "
      "s.created_at, p.id, p.source_hash, p.name, p.path, p.level, p.problem_number, p.source, "
      "(SELECT json FROM search_state WHERE scope = s.id AND kind = 'intents'), "
      "(SELECT json_extract(payload, '$.info.device') FROM events WHERE session = s.id AND "
      "kind = 'started' ORDER BY id DESC LIMIT 1) "
      "FROM sessions s LEFT JOIN problems p ON p.id = COALESCE(s.problem_id, (SELECT "
      "e.problem_id FROM evaluations e WHERE e.session = s.id ORDER BY e.id LIMIT 1)) "
      "ORDER BY s.created_at, s.rowid");
  if (!st) return std::unexpected(st.error());
  return st->rows([](const Statement& row) {
    TraceSessionRow t;
    t.row = session_from_row(row);
    t.created_at = row.col_text(14);
    if (!row.col_null(15)) {
      ProblemRow p;
      p.source_hash = row.col_text(16);
      p.name = row.col_text(17);
      p.path = row.col_text(18);
      if (auto l = opt_int(row, 19)) p.level = static_cast<int>(*l);
      if (auto n = opt_int(row, 20)) p.problem_number = static_cast<int>(*n);
      p.source = row.col_text(21);
      t.problem = std::move(p);
    }
    t.intents_json = row.col_null(22) ? "" : row.col_text(22);
    t.device_name = row.col_null(23) ? "" : row.col_text(23);
    return t;
  });
}

util::Result<std::optional<std::string>> Store::candidate_source(int64_t id) {
  auto st = db_.prepare("SELECT source FROM candidates WHERE id = ?1");
  if (!st) return std::unexpected(st.error());
  st->bind(1, id);
  return st->first_row([](const Statement& row) { return row.col_text(0); });
}

util::Result<std::vector<TraceLlmCall>> Store::trace_llm_calls(const std::string& session) {
  auto st = db_.prepare(
      "SELECT id, json_extract(request, '$.attempt'), purpose, model, request, status, started_at, "
      "response, input_tokens, "
      "output_tokens, cost_usd, latency_ms FROM llm_calls WHERE session = ?1 ORDER BY id");
  if (!st) return std::unexpected(st.error());
  st->bind(1, session);
  return st->rows([](const Statement& row) {
    TraceLlmCall c;
    c.id = row.col_int(0);
    if (auto a = opt_int(row, 1)) c.attempt_number = static_cast<int>(*a);
    c.purpose = row.col_text(2);
    c.model = row.col_text(3);
    c.request_json = row.col_text(4);
    c.status = row.col_text(5);
    c.started_at = row.col_text(6);
    if (!row.col_null(7)) c.response = row.col_text(7);
    c.input_tokens = opt_int(row, 8);
    c.output_tokens = opt_int(row, 9);
    c.cost_usd = opt_double(row, 10);
    c.latency_ms = row.col_double(11);
    return c;
  });
}

}  // namespace ok::store
