// Provider-neutral request and reply values of the LLM layer, and the sink that receives a
// streamed reply while it arrives.
//
// Plain values that own their members. A StreamSink is called on the thread that runs the call,
// in order, from inside the HTTP read loop: it must return quickly and must not throw.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace ok::llm {

enum class Role { kUser, kAssistant };

struct Message {
  Role role = Role::kUser;
  std::string content;
};

struct Request {
  std::string system;
  std::vector<Message> messages;
  int max_tokens = 4096;
  std::optional<double> temperature;            // ignored for reasoning models
  std::optional<std::string> reasoning_effort;  // OpenAI reasoning models: minimal..high
  bool stream = false;
  // Ask the API for JSON matching this schema (set by Client::complete_json).
  std::optional<nlohmann::json> json_schema;
  std::string purpose = "call";  // label recorded with the call: generator, critic, ping
  std::string session;           // session id recorded with the call; empty for none
  // The caller's account of the prompt (its sections and their budgets), recorded with the
  // request as `prompt_sections`; null for none. Never sent.
  nlohmann::json prompt_sections = nullptr;

  // The session's attempt the call serves: recorded in the request's JSON as `attempt` (the trace
  // export's link from prompts to attempts); never sent to the API.
  std::optional<int> attempt_number;
};

struct Usage {
  int64_t input_tokens = 0;  // every prompt token, cached ones included
  int64_t output_tokens = 0;
  int64_t cached_input_tokens = 0;
  bool estimated = false;                   // counted from characters: the API reported none
  std::optional<double> reported_cost_usd;  // a cost the API itself stated (OpenRouter)
};

struct Response {
  std::string text;         // the reply; for structured calls, the JSON text
  std::string stop_reason;  // end, length, tool, refusal, or the API's own word
  std::string model;        // as the API named it
  std::string id;
  Usage usage;
  std::optional<double> cost_usd;  // nullopt when the model's price is unknown
  bool cost_estimated = false;
  double latency_ms = 0;          // the whole call, retries and backoff included
  std::optional<double> ttft_ms;  // first token of the successful attempt, from its start
  int attempts = 0;
};

// Receives a reply piece by piece (the engine's observer adapts to this).
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  virtual void on_delta(std::string_view text) = 0;
  // A new attempt starts: what on_delta delivered so far is void.
  virtual void on_retry(int /*attempt*/, const util::Error& /*why*/) {}
};

// A StreamSink over two callables; either may be empty.
class FunctionSink : public StreamSink {
 public:
  explicit FunctionSink(std::function<void(std::string_view)> delta,
                        std::function<void(int, const util::Error&)> retry = {})
      : delta_(std::move(delta)), retry_(std::move(retry)) {}
  void on_delta(std::string_view text) override {
    if (delta_) delta_(text);
  }
  void on_retry(int attempt, const util::Error& why) override {
    if (retry_) retry_(attempt, why);
  }

 private:
  std::function<void(std::string_view)> delta_;
  std::function<void(int, const util::Error&)> retry_;
};

// A rough token count for text when an API reports no usage (4 characters a token).
int64_t estimate_tokens(std::string_view text);

// The name of an error kind as recorded and printed (auth, rate_limited, ...).
std::string_view error_kind_name(util::ErrorKind kind);

}  // namespace ok::llm
