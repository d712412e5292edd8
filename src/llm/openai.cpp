// The OpenAI Chat Completions API (api.openai.com and any compatible server).
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "llm/provider.hpp"
#include "llm/stream_reader.hpp"

namespace ok::llm {

namespace {

using nlohmann::json;

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

// The Chat Completions stream: chunks of choices[0].delta, then `data: [DONE]`.
class ChatStreamReader final : public StreamReader {
 public:
  using StreamReader::StreamReader;

  bool done = false;
  std::string finish;

 private:
  bool handle(const SseEvent& e) override {
    if (e.data == "[DONE]") {
      done = true;
      return true;
    }
    const auto parsed = parse(e);
    if (!parsed) return false;
    const json& j = *parsed;
    if (j.contains("error")) {
      error = "the server reported an error mid-stream: " + wire::api_error_message(e.data);
      return false;
    }
    if (j.contains("model") && j["model"].is_string()) model = j["model"].get<std::string>();
    if (j.contains("id") && j["id"].is_string()) id = j["id"].get<std::string>();
    if (j.contains("usage") && j["usage"].is_object()) read_usage(j["usage"], usage.emplace());
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return true;
    const json& choice = j["choices"][0];
    if (choice.contains("delta") && choice["delta"].is_object()) {
      const json& d = choice["delta"];
      for (const char* k : {"reasoning", "reasoning_content"})
        if (d.contains(k) && d[k].is_string() && !d[k].get_ref<const std::string&>().empty())
          mark_token();
      if (d.contains("content") && d["content"].is_string()) {
        const auto& piece = d["content"].get_ref<const std::string&>();
        if (!piece.empty()) deliver(text, piece);
      }
    }
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
      finish = choice["finish_reason"].get<std::string>();
    return true;
  }
};

class OpenAIProvider final : public Provider {
 public:
  explicit OpenAIProvider(Endpoint ep) : ep_(std::move(ep)) {}

  std::expected<Response, AttemptError> send(const Request& req, const AttemptOptions& opts,
                                             StreamSink* sink) override {
    std::vector<std::string> headers = {"Content-Type: application/json"};
    if (!ep_.api_key.empty()) headers.push_back("Authorization: Bearer " + ep_.api_key);
    const HttpRequest http = wire::post(ep_.base_url + "/chat/completions", std::move(headers),
                                        body(req).dump(), req, opts);
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
    b[ep_.provider.max_completion_tokens ? "max_completion_tokens" : "max_tokens"] =
        wire::max_output_tokens(req, ep_);
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
    return wire::whole_response(
        http_post(http, nullptr), http, ep_, req, sink,
        [](const json& j) { return j.contains("error"); }, "choices[0].message",
        [](const json& j, Response& r, std::optional<Usage>& usage) {
          const json& choice = j.at("choices").at(0);
          const json& msg = choice.at("message");
          if (msg.contains("content") && msg["content"].is_string())
            r.text = msg["content"].get<std::string>();
          if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
            r.stop_reason = stop_reason(choice["finish_reason"].get<std::string>());
          if (msg.contains("refusal") && msg["refusal"].is_string()) r.stop_reason = "refusal";
          if (j.contains("usage") && j["usage"].is_object())
            read_usage(j["usage"], usage.emplace());
        });
  }

  std::expected<Response, AttemptError> send_stream(const Request& req, const HttpRequest& http,
                                                    StreamSink* sink) {
    ChatStreamReader reader(sink);
    const HttpResponse res = http_post(http, &reader);
    if (auto e = wire::stream_error(res, http, ep_, reader.error, reader.error_retryable,
                                    reader.done || !reader.finish.empty(), "its end marker"))
      return std::unexpected(std::move(*e));
    return reader.response(std::move(reader.text), stop_reason(reader.finish), req, ep_.model_id);
  }

  Endpoint ep_;
};

}  // namespace

std::unique_ptr<Provider> make_openai_provider(const Endpoint& endpoint) {
  return std::make_unique<OpenAIProvider>(endpoint);
}

}  // namespace ok::llm
