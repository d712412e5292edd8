#include "llm/recorder.hpp"

#include <fmt/chrono.h>
#include <fmt/core.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace ok::llm {

std::string_view error_kind_name(util::ErrorKind kind) {
  using util::ErrorKind;
  switch (kind) {
    case ErrorKind::kUsage:
      return "usage";
    case ErrorKind::kBadInput:
      return "bad_input";
    case ErrorKind::kEnvironment:
      return "environment";
    case ErrorKind::kInternal:
      return "internal";
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kNetwork:
      return "network";
    case ErrorKind::kAuth:
      return "auth";
    case ErrorKind::kRateLimited:
      return "rate_limited";
    case ErrorKind::kServer:
      return "server";
    case ErrorKind::kProtocol:
      return "protocol";
    case ErrorKind::kCancelled:
      return "cancelled";
    case ErrorKind::kBudget:
      return "budget";
  }
  return "unknown";
}

std::string request_to_json(const Request& req) {
  nlohmann::json msgs = nlohmann::json::array();
  for (const auto& m : req.messages)
    msgs.push_back(
        {{"role", m.role == Role::kAssistant ? "assistant" : "user"}, {"content", m.content}});
  nlohmann::json j = {{"system", req.system},
                      {"messages", std::move(msgs)},
                      {"max_tokens", req.max_tokens},
                      {"stream", req.stream}};
  if (req.temperature) j["temperature"] = *req.temperature;
  if (req.reasoning_effort) j["reasoning_effort"] = *req.reasoning_effort;
  if (req.json_schema) j["json_schema"] = *req.json_schema;
  return j.dump();
}

std::string utc_now_iso() {
  const auto now = std::chrono::system_clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", fmt::gmtime(t), ms);
}

StoreRecorder::StoreRecorder(store::Store owned, Redactor redactor)
    : owned_(std::move(owned)), db_(&owned_->db()), redactor_(std::move(redactor)) {}

util::Result<std::unique_ptr<StoreRecorder>> StoreRecorder::open(const std::filesystem::path& path,
                                                                 Redactor redactor) {
  auto st = store::Store::open(path);
  if (!st) return std::unexpected(st.error());
  return std::unique_ptr<StoreRecorder>(new StoreRecorder(std::move(*st), std::move(redactor)));
}

util::Result<void> StoreRecorder::record(const CallRecord& r) {
  std::lock_guard lock(mu_);
  auto st = db_->prepare(
      "INSERT INTO llm_calls(session, purpose, provider, model, base_url, stream, request, "
      "response, stop_reason, status, error_kind, error, http_status, attempts, input_tokens, "
      "output_tokens, cached_input_tokens, usage_estimated, cost_usd, cost_estimated, latency_ms, "
      "ttft_ms, started_at) VALUES "
      "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23)");
  if (!st) return std::unexpected(st.error());
  auto text = [&](int i, const std::string& v) {
    st->bind(i, std::string_view(redactor_.apply(v)));
  };
  auto opt_text = [&](int i, const std::string& v) {
    if (v.empty()) {
      st->bind_null(i);
    } else {
      text(i, v);
    }
  };
  opt_text(1, r.session);
  text(2, r.purpose);
  text(3, r.provider);
  text(4, r.model);
  text(5, r.base_url);
  st->bind(6, int64_t{r.stream});
  text(7, r.request_json);
  if (r.response) {
    text(8, *r.response);
  } else {
    st->bind_null(8);
  }
  opt_text(9, r.stop_reason);
  text(10, r.ok ? "ok" : "error");
  opt_text(11, r.error_kind);
  opt_text(12, r.error);
  if (r.http_status != 0) {
    st->bind(13, int64_t{r.http_status});
  } else {
    st->bind_null(13);
  }
  st->bind(14, int64_t{r.attempts});
  if (r.usage) {
    st->bind(15, r.usage->input_tokens)
        .bind(16, r.usage->output_tokens)
        .bind(17, r.usage->cached_input_tokens)
        .bind(18, int64_t{r.usage->estimated});
  } else {
    st->bind_null(15).bind_null(16).bind_null(17).bind(18, int64_t{0});
  }
  st->bind(19, r.cost_usd).bind(20, int64_t{r.cost_estimated}).bind(21, r.latency_ms);
  st->bind(22, r.ttft_ms);
  text(23, r.started_at);
  if (auto run = st->run(); !run) return std::unexpected(run.error());
  last_id_ = db_->last_insert_id();
  return {};
}

int64_t StoreRecorder::last_id() const {
  std::lock_guard lock(mu_);
  return last_id_;
}

}  // namespace ok::llm
