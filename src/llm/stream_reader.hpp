// StreamReader: what reading a streamed reply (server-sent events) shares across the wire APIs.
//
// It feeds the SSE parser, stops the transfer on an oversized event or on the first event the API
// rejects, times the first token (text, tool input or reasoning, whichever comes first), gathers
// the reply's text and forwards each piece to the sink as it arrives. A wire API derives from it
// and decodes its own event shapes in handle(); the fields below are what it fills. Not
// thread-safe: one reader serves one transfer.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llm/http.hpp"
#include "llm/sse.hpp"
#include "llm/types.hpp"

namespace ok::llm {

class StreamReader : public HttpReader {
 public:
  explicit StreamReader(StreamSink* sink);

  bool on_data(std::string_view chunk) final;
  bool first_token_seen() const final { return ttft_ms.has_value(); }

  std::optional<std::string> error;  // why reading stopped, when the stream was rejected
  bool error_retryable = true;       // whether that error is worth another attempt
  std::string text;                  // the reply's text, as gathered so far
  std::string model, id;             // as the stream names them (empty when it does not)
  std::optional<Usage> usage;        // as the stream reports it (none: estimate it)
  std::optional<double> ttft_ms;     // from the reader's creation to the first token

  // The Response of a complete stream: `reply_text` (the text, or a tool's input), the API's
  // stop reason mapped, and what the stream named (else the endpoint's model, estimated usage).
  Response response(std::string reply_text, std::string stop_reason, const Request& req,
                    const std::string& default_model) const;

 protected:
  // Decodes one event; false stops the transfer (set `error` first).
  virtual bool handle(const SseEvent& e) = 0;
  // The event's data as a JSON object, or nullopt with `error` set.
  std::optional<nlohmann::json> parse(const SseEvent& e);
  // Notes that a token arrived (the first one sets ttft_ms).
  void mark_token();
  // A token: appends `piece` to `into` and passes it to the sink when not empty.
  void deliver(std::string& into, const std::string& piece);

 private:
  using Clock = std::chrono::steady_clock;
  StreamSink* sink_;
  Clock::time_point start_;
  SseParser parser_;
  std::vector<SseEvent> events_;
};

}  // namespace ok::llm
