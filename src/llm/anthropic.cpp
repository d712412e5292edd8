// Anthropic's Messages API, natively. Structured output goes through a forced tool call whose
// input schema is the requested schema.
#include <fmt/core.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>

#include "llm/provider.hpp"
#include "llm/sse.hpp"

namespace ok::llm {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kVersion = "2023-06-01";
constexpr const char* kTool = "reply";

std::string stop_reason(const std::string& r) {
  if (r == "end_turn" || r == "stop_sequence") return "end";
  if (r == "max_tokens") return "length";
  if (r == "tool_use") return "tool";
  return r;
}

// Input tokens: Anthropic counts cache reads and writes apart from input_tokens.
void read_usage(const json& u, Usage& usage) {
  const int64_t cache_read = u.value("cache_read_input_tokens", int64_t{0});
  const int64_t cache_write = u.value("cache_creation_input_tokens", int64_t{0});
  if (u.contains("input_tokens"))
    usage.input_tokens = u["input_tokens"].get<int64_t>() + cache_read + cache_write;
  if (u.contains("output_tokens")) usage.output_tokens = u["output_tokens"].get<int64_t>();
  usage.cached_input_tokens = cache_read;
  usage.estimated = false;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

bool retryable_error_type(const std::string& type) {
  return type == "overloaded_error" || type == "api_error" || type == "rate_limit_error";
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
  bool error_retryable_ = true;
  bool stopped_ = false;
  bool saw_usage_ = false;
  std::string stop_;
  std::string text_;
  std::string tool_json_;
  bool tool_used_ = false;
  std::string model_, id_;
  Usage usage_;
  std::optional<double> ttft_ms_;

 private:
  bool handle(const SseEvent& e) {
    const json j = json::parse(e.data, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      error_ = fmt::format("malformed JSON in the stream: {}", e.data.substr(0, 120));
      return false;
    }
    const std::string type = j.value("type", e.event);
    if (type == "error") {
      std::string etype;
      if (j.contains("error") && j["error"].is_object()) etype = j["error"].value("type", "");
      error_ = "the server reported an error mid-stream: " + wire::api_error_message(e.data);
      error_retryable_ = retryable_error_type(etype);
      return false;
    }
    if (type == "message_start" && j.contains("message")) {
      const json& m = j["message"];
      model_ = m.value("model", "");
      id_ = m.value("id", "");
      if (m.contains("usage") && m["usage"].is_object()) {
        read_usage(m["usage"], usage_);
        saw_usage_ = true;
      }
    } else if (type == "content_block_start" && j.contains("content_block")) {
      if (j["content_block"].value("type", "") == "tool_use") tool_used_ = true;
    } else if (type == "content_block_delta" && j.contains("delta")) {
      const json& d = j["delta"];
      const std::string dtype = d.value("type", "");
      if (dtype == "text_delta") {
        const std::string piece = d.value("text", "");
        mark_token();
        text_ += piece;
        if (sink_ && !piece.empty()) sink_->on_delta(piece);
      } else if (dtype == "input_json_delta") {
        const std::string piece = d.value("partial_json", "");
        mark_token();
        tool_json_ += piece;
        if (sink_ && !piece.empty()) sink_->on_delta(piece);
      } else if (dtype == "thinking_delta") {
        mark_token();
      }
    } else if (type == "message_delta") {
      if (j.contains("delta") && j["delta"].contains("stop_reason") &&
          j["delta"]["stop_reason"].is_string())
        stop_ = j["delta"]["stop_reason"].get<std::string>();
      if (j.contains("usage") && j["usage"].is_object()) {
        const json& u = j["usage"];
        if (u.contains("output_tokens")) usage_.output_tokens = u["output_tokens"].get<int64_t>();
        if (u.contains("input_tokens") && u["input_tokens"].is_number()) read_usage(u, usage_);
        saw_usage_ = true;
      }
    } else if (type == "message_stop") {
      stopped_ = true;
    }
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

class AnthropicProvider final : public Provider {
 public:
  explicit AnthropicProvider(Endpoint ep) : ep_(std::move(ep)) {}

  std::expected<Response, AttemptError> send(const Request& req, const AttemptOptions& opts,
                                             StreamSink* sink) override {
    HttpRequest http;
    // Accept both https://api.anthropic.com and a base URL that already ends in /v1.
    http.url = ep_.base_url + (ep_.base_url.ends_with("/v1") ? "/messages" : "/v1/messages");
    http.headers = {"Content-Type: application/json",
                    std::string("anthropic-version: ") + kVersion};
    if (!ep_.api_key.empty()) http.headers.push_back("x-api-key: " + ep_.api_key);
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
    for (const auto& m : req.messages)
      msgs.push_back(
          {{"role", m.role == Role::kAssistant ? "assistant" : "user"}, {"content", m.content}});
    int64_t max_tokens = req.max_tokens;
    if (ep_.info && ep_.info->max_output_tokens > 0)
      max_tokens = std::min(max_tokens, ep_.info->max_output_tokens);
    json b = {{"model", ep_.model_id}, {"max_tokens", max_tokens}, {"messages", std::move(msgs)}};
    if (!req.system.empty()) b["system"] = req.system;
    if (req.temperature) b["temperature"] = *req.temperature;
    if (req.stream) b["stream"] = true;
    if (req.json_schema) {
      b["tools"] = json::array({{{"name", kTool},
                                 {"description", "Give the reply as JSON matching the schema."},
                                 {"input_schema", *req.json_schema}}});
      b["tool_choice"] = {{"type", "tool"}, {"name", kTool}};
    }
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
    if (j.value("type", "") == "error")
      return std::unexpected(
          wire::protocol_error(ep_, fmt::format("{} returned an error: {}", ep_.provider.name,
                                                wire::api_error_message(res.body))));
    Response r;
    try {
      bool tool = false;
      std::string tool_json;
      for (const json& block : j.at("content")) {
        const std::string type = block.value("type", "");
        if (type == "text") r.text += block.value("text", "");
        if (type == "tool_use" && block.contains("input")) {
          tool = true;
          tool_json = block["input"].dump();
        }
      }
      if (tool && req.json_schema) r.text = tool_json;
      if (j.contains("stop_reason") && j["stop_reason"].is_string())
        r.stop_reason = stop_reason(j["stop_reason"].get<std::string>());
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
          wire::protocol_error(ep_, fmt::format("the reply from {} has no content blocks: {}",
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
    if (reader.error_)
      return std::unexpected(wire::protocol_error(ep_, *reader.error_, reader.error_retryable_));
    if (res.status != 0 && !wire::is_success(res.status))
      return std::unexpected(wire::status_error(res, ep_));
    if (res.transport != Transport::kOk)
      return std::unexpected(wire::transport_error(res, ep_, http.timeouts));
    if (!reader.stopped_)
      return std::unexpected(wire::protocol_error(
          ep_, fmt::format("the stream from {} ended without message_stop after {} bytes "
                           "(truncated)",
                           ep_.provider.name, res.streamed_bytes)));
    Response r;
    r.text = reader.tool_used_ && req.json_schema ? std::move(reader.tool_json_)
                                                  : std::move(reader.text_);
    r.stop_reason = stop_reason(reader.stop_);
    r.model = reader.model_.empty() ? ep_.model_id : reader.model_;
    r.id = reader.id_;
    if (reader.saw_usage_) {
      r.usage = reader.usage_;
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

std::unique_ptr<Provider> make_anthropic_provider(const Endpoint& endpoint) {
  return std::make_unique<AnthropicProvider>(endpoint);
}

}  // namespace ok::llm
