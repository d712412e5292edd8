// The store's two logs: the LLM calls (llm_calls) and the engine's events (events).
#include "store/store.hpp"

namespace ok::store {

util::Result<int64_t> Store::insert_llm_call(const LlmCallRow& c) {
  auto st = db_.prepare(
      "INSERT INTO llm_calls(session, purpose, provider, model, base_url, stream, request, "
      "response, stop_reason, status, error_kind, error, http_status, attempts, input_tokens, "
      "output_tokens, cached_input_tokens, usage_estimated, cost_usd, cost_estimated, latency_ms, "
      "ttft_ms, started_at) VALUES "
      "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23)");
  if (!st) return std::unexpected(st.error());
  st->bind_text_or_null(1, c.session);
  st->bind(2, c.purpose).bind(3, c.provider).bind(4, c.model).bind(5, c.base_url);
  st->bind(6, int64_t{c.stream}).bind(7, c.request_json);
  st->bind_or_null(8, c.response);
  st->bind_text_or_null(9, c.stop_reason);
  st->bind(10, c.status);
  st->bind_text_or_null(11, c.error_kind);
  st->bind_text_or_null(12, c.error);
  st->bind_or_null(13, c.http_status);
  st->bind(14, int64_t{c.attempts});
  st->bind_or_null(15, c.input_tokens);
  st->bind_or_null(16, c.output_tokens);
  st->bind_or_null(17, c.cached_input_tokens);
  st->bind(18, int64_t{c.usage_estimated});
  st->bind(19, c.cost_usd).bind(20, int64_t{c.cost_estimated}).bind(21, c.latency_ms);
  st->bind(22, c.ttft_ms).bind(23, c.started_at);
  if (auto r = st->run(); !r) return std::unexpected(r.error());
  return db_.last_insert_id();
}

util::Result<int64_t> Store::append_event(const EventRow& e) {
  auto st = db_.prepare(
      "INSERT INTO events(session, kind, number, total, text, payload) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  if (!st) return std::unexpected(st.error());
  st->bind(1, e.session).bind(2, e.kind).bind(3, int64_t{e.number}).bind(4, int64_t{e.total});
  st->bind(5, e.text).bind(6, e.payload_json);
  if (auto r = st->run(); !r) return std::unexpected(r.error());
  return db_.last_insert_id();
}

util::Result<std::vector<EventRow>> Store::events_since(const std::string& session,
                                                        int64_t after_id, int limit) {
  auto st = db_.prepare(
      "SELECT id, session, time, kind, number, total, text, payload FROM events "
      "WHERE session = ?1 AND id > ?2 ORDER BY id LIMIT ?3");
  if (!st) return std::unexpected(st.error());
  st->bind(1, session).bind(2, after_id).bind(3, int64_t{limit});
  return st->rows([](const Statement& row) {
    EventRow e;
    e.id = row.col_int(0);
    e.session = row.col_text(1);
    e.time = row.col_text(2);
    e.kind = row.col_text(3);
    e.number = static_cast<int>(row.col_int(4));
    e.total = static_cast<int>(row.col_int(5));
    e.text = row.col_text(6);
    e.payload_json = row.col_text(7);
    return e;
  });
}

}  // namespace ok::store
