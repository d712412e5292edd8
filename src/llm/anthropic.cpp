// Anthropic's Messages API, natively. Structured output goes through a forced tool call whose
// input schema is the requested schema.
#include <fmt/core.h>

#include <map>
#include <nlohmann/json.hpp>

#include "llm/provider.hpp"
#include "llm/stream_reader.hpp"

namespace ok::llm {

namespace {

using nlohmann::json;

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

bool retryable_error_type(const std::string& type) {
  return type == "overloaded_error" || type == "api_error" || type == "rate_limit_error";
}

// The Messages stream: message_start, content blocks (text or the forced tool's input JSON),
// message_delta (stop reason, final usage), message_stop.
class MessagesStreamReader final : public StreamReader {
 public:
  using StreamReader::StreamReader;

  bool stopped = false;
  std::string stop;
  std::string tool_json;
  bool tool_used = false;

 private:
  bool handle(const SseEvent& e) override {
    const auto parsed = parse(e);
    if (!parsed) return false;
    const json& j = *parsed;
    const std::string type = j.value("type", e.event);
    if (type == "error") {
      std::string etype;
      if (j.contains("error") && j["error"].is_object()) etype = j["error"].value("type", "");
      error = "the server reported an error mid-stream: " + wire::api_error_message(e.data);
      error_retryable = retryable_error_type(etype);
      return false;
    }
    if (type == "message_start" && j.contains("message")) {
      const json& m = j["message"];
      model = m.value("model", "");
      id = m.value("id", "");
      if (m.contains("usage") && m["usage"].is_object()) read_usage(m["usage"], reported());
    } else if (type == "content_block_start" && j.contains("content_block")) {
      if (j["content_block"].value("type", "") == "tool_use") tool_used = true;
    } else if (type == "content_block_delta" && j.contains("delta")) {
      const json& d = j["delta"];
      const std::string dtype = d.value("type", "");
      if (dtype == "text_delta") {
        deliver(text, d.value("text", ""));
      } else if (dtype == "input_json_delta") {
        deliver(tool_json, d.value("partial_json", ""));
      } else if (dtype == "thinking_delta") {
        mark_token();
      }
    } else if (type == "message_delta") {
      if (j.contains("delta") && j["delta"].contains("stop_reason") &&
          j["delta"]["stop_reason"].is_string())
        stop = j["delta"]["stop_reason"].get<std::string>();
      if (j.contains("usage") && j["usage"].is_object()) {
        const json& u = j["usage"];
        Usage& total = reported();
        if (u.contains("output_tokens")) total.output_tokens = u["output_tokens"].get<int64_t>();
        if (u.contains("input_tokens") && u["input_tokens"].is_number()) read_usage(u, total);
      }
    } else if (type == "message_stop") {
      stopped = true;
    }
    return true;
  }

  // The usage reported so far: message_start gives input tokens, message_delta the output.
  Usage& reported() { return usage ? *usage : usage.emplace(); }
};

class AnthropicProvider final : public Provider {
 public:
  explicit AnthropicProvider(Endpoint ep) : ep_(std::move(ep)) {}

  std::expected<Response, AttemptError> send(const Request& req, const AttemptOptions& opts,
                                             StreamSink* sink) override {
    // Accept both https://api.anthropic.com and a base URL that already ends in /v1.
    std::string url = ep_.base_url + (ep_.base_url.ends_with("/v1") ? "/messages" : "/v1/messages");
    std::vector<std::string> headers = {"Content-Type: application/json",
                                        std::string("anthropic-version: ") + kVersion};
    if (!ep_.api_key.empty()) headers.push_back("x-api-key: " + ep_.api_key);
    const HttpRequest http =
        wire::post(std::move(url), std::move(headers), body(req).dump(), req, opts);
    return req.stream ? send_stream(req, http, sink) : send_whole(req, http, sink);
  }

 private:
  json body(const Request& req) const {
    json msgs = json::array();
    for (const auto& m : req.messages)
      msgs.push_back(
          {{"role", m.role == Role::kAssistant ? "assistant" : "user"}, {"content", m.content}});
    json b = {{"model", ep_.model_id},
              {"max_tokens", wire::max_output_tokens(req, ep_)},
              {"messages", std::move(msgs)}};
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
    return wire::whole_response(
        http_post(http, nullptr), http, ep_, req, sink,
        [](const json& j) { return j.value("type", "") == "error"; }, "content blocks",
        [&req](const json& j, Response& r, std::optional<Usage>& usage) {
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
          if (j.contains("usage") && j["usage"].is_object())
            read_usage(j["usage"], usage.emplace());
        });
  }

  std::expected<Response, AttemptError> send_stream(const Request& req, const HttpRequest& http,
                                                    StreamSink* sink) {
    MessagesStreamReader reader(sink);
    const HttpResponse res = http_post(http, &reader);
    if (auto e = wire::stream_error(res, http, ep_, reader.error, reader.error_retryable,
                                    reader.stopped, "message_stop"))
      return std::unexpected(std::move(*e));
    std::string text =
        reader.tool_used && req.json_schema ? std::move(reader.tool_json) : std::move(reader.text);
    return reader.response(std::move(text), stop_reason(reader.stop), req, ep_.model_id);
  }

  Endpoint ep_;
};

}  // namespace

std::unique_ptr<Provider> make_anthropic_provider(const Endpoint& endpoint) {
  return std::make_unique<AnthropicProvider>(endpoint);
}

}  // namespace ok::llm
