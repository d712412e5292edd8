#include "llm/recorder.hpp"

#include <fmt/chrono.h>
#include <fmt/core.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "llm/provider.hpp"
#include "util/enum_names.hpp"

namespace ok::llm {

namespace {

using util::ErrorKind;
constexpr util::EnumName<ErrorKind> kErrorKindNames[] = {
    {ErrorKind::kUsage, "usage"},
    {ErrorKind::kBadInput, "bad_input"},
    {ErrorKind::kEnvironment, "environment"},
    {ErrorKind::kInternal, "internal"},
    {ErrorKind::kTimeout, "timeout"},
    {ErrorKind::kNetwork, "network"},
    {ErrorKind::kAuth, "auth"},
    {ErrorKind::kRateLimited, "rate_limited"},
    {ErrorKind::kServer, "server"},
    {ErrorKind::kProtocol, "protocol"},
    {ErrorKind::kCancelled, "cancelled"},
    {ErrorKind::kBudget, "budget"},
};

}  // namespace

std::string_view error_kind_name(util::ErrorKind kind) {
  return util::name_of(kErrorKindNames, kind, "unknown");
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
  // The characters / 4 estimate, to check against the reported input_tokens (docs/llm.md).
  j["estimated_input_tokens"] = wire::estimate_input_tokens(req);
  if (!req.prompt_sections.is_null()) j["prompt_sections"] = req.prompt_sections;
  if (req.attempt_number) j["attempt"] = *req.attempt_number;
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
    : owned_(std::move(owned)), store_(&*owned_), redactor_(std::move(redactor)) {}

util::Result<std::unique_ptr<StoreRecorder>> StoreRecorder::open(const std::filesystem::path& path,
                                                                 Redactor redactor) {
  auto st = store::Store::open(path);
  if (!st) return std::unexpected(st.error());
  return std::unique_ptr<StoreRecorder>(new StoreRecorder(std::move(*st), std::move(redactor)));
}

util::Result<void> StoreRecorder::record(const CallRecord& r) {
  auto text = [&](const std::string& v) { return redactor_.apply(v); };
  store::LlmCallRow row;
  row.session = text(r.session);
  row.purpose = text(r.purpose);
  row.provider = text(r.provider);
  row.model = text(r.model);
  row.base_url = text(r.base_url);
  row.stream = r.stream;
  row.request_json = text(r.request_json);
  if (r.response) row.response = text(*r.response);
  row.stop_reason = text(r.stop_reason);
  row.status = r.ok ? "ok" : "error";
  row.error_kind = text(r.error_kind);
  row.error = text(r.error);
  if (r.http_status != 0) row.http_status = r.http_status;
  row.attempts = r.attempts;
  if (r.usage) {
    row.input_tokens = r.usage->input_tokens;
    row.output_tokens = r.usage->output_tokens;
    row.cached_input_tokens = r.usage->cached_input_tokens;
    row.usage_estimated = r.usage->estimated;
  }
  row.cost_usd = r.cost_usd;
  row.cost_estimated = r.cost_estimated;
  row.latency_ms = r.latency_ms;
  row.ttft_ms = r.ttft_ms;
  row.started_at = text(r.started_at);
  std::lock_guard lock(mu_);
  auto id = store_->insert_llm_call(row);
  if (!id) return std::unexpected(id.error());
  last_id_ = *id;
  return {};
}

int64_t StoreRecorder::last_id() const {
  std::lock_guard lock(mu_);
  return last_id_;
}

}  // namespace ok::llm
