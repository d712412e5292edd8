// The OpenAI Chat Completions API (api.openai.com and any compatible server).
#include <fmt/core.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "llm/provider.hpp"
#include "llm/sse.hpp"

namespace ok::llm {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string stop_reason(const std::string& r) {
  if (r == "stop") return "end";
  if (r == "tool_calls" || r == "function_call") return "tool";
  if (r == "content_filter") return "refusal";
  return r;
}

void read_usage(const json& u, Usage& usage) {
  usage.input_tokens = u.value("prompt_tokens", int64_t{0});
  usage.output_tokens = u.value("completion_tokens", int64_t{0});
  if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object())
    usage.cached_input_tokens = u["prompt_tokens_details"].value("cached_tokens", int64_t{0});
  if (u.contains("cost") && u["cost"].is_number())
    usage.reported_cost_usd = u["cost"].get<double>();
  usage.estimated = false;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

class StreamReader final : public HttpReader {
 public:
  StreamReader(StreamSink* sink, Clock::time_point start) : sink_(sink), start_(start) {}

  bool on_data(std::string_view chunk) override {
    events_.clear();
    parser_.feed(chunk, events_);
    if (parser_.overflowed()) {
      error_ = "an event in the stream exceeded the size limit";
      return false;
    }
    for (const auto& e : events_)
      if (!handle(e)) return false;
    return true;
  }
  bool first_token_seen() const override { return ttft_ms_.has_value(); }

  std::optional<std::string> error_;
  bool done_ = false;
  std::string finish_;
  std::string text_;
  std::string model_, id_;
  std::optional<Usage> usage_;
  std::optional<double> ttft_ms_;

 private:
  bool handle(const SseEvent& e) {
    if (e.data == "[DONE]") {
      done_ = true;
      return true;
    }
    const json j = json::parse(e.data, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      error_ = fmt::format("malformed JSON in the stream: {}", e.data.substr(0, 120));
      return false;
    }
    if (j.contains("error")) {
      error_ = "the server reported an error mid-stream: " + wire::api_error_message(e.data);
      return false;
    }
    if (j.contains("model") && j["model"].is_string()) model_ = j["model"].get<std::string>();
    if (j.contains("id") && j["id"].is_string()) id_ = j["id"].get<std::string>();
    if (j.contains("usage") && j["usage"].is_object()) {
      Usage u;
      read_usage(j["usage"], u);
      usage_ = u;
    }
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return true;
    const json& choice = j["choices"][0];
    if (choice.contains("delta") && choice["delta"].is_object()) {
      const json& d = choice["delta"];
      for (const char* k : {"reasoning", "reasoning_content"})
        if (d.contains(k) && d[k].is_string() && !d[k].get_ref<const std::string&>().empty())
          mark_token();
      if (d.contains("content") && d["content"].is_string()) {
        const auto& piece = d["content"].get_ref<const std::string&>();
        if (!piece.empty()) {
          mark_token();
          text_ += piece;
          if (sink_) sink_->on_delta(piece);
        }
      }
    }
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
      finish_ = choice["finish_reason"].get<std::string>();
    return true;
  }

  void mark_token() {
    if (!ttft_ms_) ttft_ms_ = ms_since(start_);
  }

  StreamSink* sink_;
  Clock::time_point start_;
  SseParser parser_;
  std::vector<SseEvent> events_;
};

class OpenAIProvider final : public Provider {
 public:
  explicit OpenAIProvider(Endpoint ep) : ep_(std::move(ep)) {}

  std::expected<Response, AttemptError> send(const Request& req, const AttemptOptions& opts,
                                             StreamSink* sink) override {
    HttpRequest http;
    http.url = ep_.base_url + "/chat/completions";
    http.headers = {"Content-Type: application/json"};
    if (!ep_.api_key.empty()) http.headers.push_back("Authorization: Bearer " + ep_.api_key);
    if (req.stream) http.headers.push_back("Accept: text/event-stream");
    http.body = body(req).dump();
    http.stream = req.stream;
    http.timeouts = opts.timeouts;
    http.cancel = opts.cancel;
    return req.stream ? send_stream(req, http, sink) : send_whole(req, http, sink);
  }

 private:
  json body(const Request& req) const {
    json msgs = json::array();
    if (!req.system.empty()) msgs.push_back({{"role", "system"}, {"content", req.system}});
    for (const auto& m : req.messages)
      msgs.push_back(
          {{"role", m.role == Role::kAssistant ? "assistant" : "user"}, {"content", m.content}});
    json b = {{"model", ep_.model_id}, {"messages", std::move(msgs)}};
    const bool reasoning = ep_.info && ep_.info->reasoning;
    int64_t max_tokens = req.max_tokens;
    if (ep_.info && ep_.info->max_output_tokens > 0)
      max_tokens = std::min(max_tokens, ep_.info->max_output_tokens);
    b[ep_.provider.max_completion_tokens ? "max_completion_tokens" : "max_tokens"] = max_tokens;
    if (req.temperature && !reasoning) b["temperature"] = *req.temperature;
    if (req.reasoning_effort && reasoning) b["reasoning_effort"] = *req.reasoning_effort;
    if (req.stream) {
      b["stream"] = true;
      b["stream_options"] = {{"include_usage", true}};
    }
    if (ep_.provider.name == "openrouter") b["usage"] = {{"include", true}};
    if (req.json_schema)
      b["response_format"] = {
          {"type", "json_schema"},
          {"json_schema", {{"name", "reply"}, {"schema", *req.json_schema}, {"strict", false}}}};
    return b;
  }

  std::expected<Response, AttemptError> send_whole(const Request& req, const HttpRequest& http,
                                                   StreamSink* sink) {
    const HttpResponse res = http_post(http, nullptr);
    if (res.transport != Transport::kOk)
      return std::unexpected(wire::transport_error(res, ep_, http.timeouts));
    if (!wire::is_success(res.status)) return std::unexpected(wire::status_error(res, ep_));
    const json j = json::parse(res.body, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return std::unexpected(
          wire::protocol_error(ep_, fmt::format("malformed JSON in the reply from {}: {}",
                                                ep_.provider.name, res.body.substr(0, 120))));
    if (j.contains("error"))
      return std::unexpected(
          wire::protocol_error(ep_, fmt::format("{} returned an error: {}", ep_.provider.name,
                                                wire::api_error_message(res.body))));
    Response r;
    try {
      const json& choice = j.at("choices").at(0);
      const json& msg = choice.at("message");
      if (msg.contains("content") && msg["content"].is_string())
        r.text = msg["content"].get<std::string>();
      if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
        r.stop_reason = stop_reason(choice["finish_reason"].get<std::string>());
      if (msg.contains("refusal") && msg["refusal"].is_string()) r.stop_reason = "refusal";
      r.model = j.value("model", ep_.model_id);
      r.id = j.value("id", "");
      if (j.contains("usage") && j["usage"].is_object()) {
        read_usage(j["usage"], r.usage);
      } else {
        r.usage.input_tokens = wire::estimate_input_tokens(req);
        r.usage.output_tokens = estimate_tokens(r.text);
        r.usage.estimated = true;
      }
    } catch (const json::exception&) {
      return std::unexpected(
          wire::protocol_error(ep_, fmt::format("the reply from {} has no choices[0].message: {}",
                                                ep_.provider.name, res.body.substr(0, 120))));
    }
    r.ttft_ms = res.first_byte_ms >= 0 ? std::optional<double>(res.first_byte_ms) : std::nullopt;
    if (sink && !r.text.empty()) sink->on_delta(r.text);
    return r;
  }

  std::expected<Response, AttemptError> send_stream(const Request& req, const HttpRequest& http,
                                                    StreamSink* sink) {
    StreamReader reader(sink, Clock::now());
    const HttpResponse res = http_post(http, &reader);
    if (reader.error_) return std::unexpected(wire::protocol_error(ep_, *reader.error_));
    if (res.status != 0 && !wire::is_success(res.status))
      return std::unexpected(wire::status_error(res, ep_));
    if (res.transport != Transport::kOk)
      return std::unexpected(wire::transport_error(res, ep_, http.timeouts));
    if (!reader.done_ && reader.finish_.empty())
      return std::unexpected(wire::protocol_error(
          ep_, fmt::format("the stream from {} ended without its end marker after {} bytes "
                           "(truncated)",
                           ep_.provider.name, res.streamed_bytes)));
    Response r;
    r.text = std::move(reader.text_);
    r.stop_reason = stop_reason(reader.finish_);
    r.model = reader.model_.empty() ? ep_.model_id : reader.model_;
    r.id = reader.id_;
    if (reader.usage_) {
      r.usage = *reader.usage_;
    } else {
      r.usage.input_tokens = wire::estimate_input_tokens(req);
      r.usage.output_tokens = estimate_tokens(r.text);
      r.usage.estimated = true;
    }
    r.ttft_ms = reader.ttft_ms_;
    return r;
  }

  Endpoint ep_;
};

}  // namespace

std::unique_ptr<Provider> make_openai_provider(const Endpoint& endpoint) {
  return std::make_unique<OpenAIProvider>(endpoint);
}

}  // namespace ok::llm
