// The seam between the Client (retries, accounting, recording) and one wire API: a Provider makes
// one attempt of one request and reports what went wrong in enough detail to decide on a retry.
//
// Implementations: the OpenAI Chat Completions API (any base URL) and Anthropic's Messages API.
// Tests of the engine may fake it. A Provider holds only its endpoint; send() may be called from
// several threads at once. Every message it produces has the API key redacted.
#pragma once

#include <atomic>
#include <expected>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "llm/http.hpp"
#include "llm/registry.hpp"
#include "llm/types.hpp"
#include "util/error.hpp"

namespace ok::llm {

struct AttemptError {
  util::Error error;
  bool retryable = false;
  long http_status = 0;
  std::optional<double> retry_after_s;  // what the server asked for
};

struct AttemptOptions {
  Timeouts timeouts;
  const std::atomic<bool>* cancel = nullptr;
};

class Provider {
 public:
  virtual ~Provider() = default;
  // One request, no retries. When req.stream, text deltas go to `sink` as they arrive; otherwise
  // the whole text goes to it once at the end. `sink` may be null.
  virtual std::expected<Response, AttemptError> send(const Request& req, const AttemptOptions& opts,
                                                     StreamSink* sink) = 0;
};

std::unique_ptr<Provider> make_provider(const Endpoint& endpoint);
std::unique_ptr<Provider> make_openai_provider(const Endpoint& endpoint);
std::unique_ptr<Provider> make_anthropic_provider(const Endpoint& endpoint);

// Helpers shared by the wire APIs.
namespace wire {

// Seconds from retry-after-ms or Retry-After (seconds or an HTTP date); nullopt when absent.
std::optional<double> parse_retry_after(const std::map<std::string, std::string>& headers);
// The message inside an API's JSON error body, else the start of the body.
std::string api_error_message(std::string_view body);
// Maps a non-2xx status to a typed, redacted error.
AttemptError status_error(const HttpResponse& res, const Endpoint& ep);
// Maps a transport failure (timeout, cut connection, cancel) to a typed, redacted error.
AttemptError transport_error(const HttpResponse& res, const Endpoint& ep, const Timeouts& to);
AttemptError protocol_error(const Endpoint& ep, const std::string& message, bool retryable = true);
// Input tokens of a request as estimated from its characters.
int64_t estimate_input_tokens(const Request& req);
bool is_success(long status);

// The POST of one request: `body` to `url` with `headers` (plus Accept: text/event-stream when the
// request streams), under the attempt's timeouts and cancel flag.
HttpRequest post(std::string url, std::vector<std::string> headers, std::string body,
                 const Request& req, const AttemptOptions& opts);
// The output-token limit to ask for: the request's, capped by the model's own when known.
int64_t max_output_tokens(const Request& req, const Endpoint& ep);
// What an API reads from a whole reply's JSON: the text and stop reason into the Response, the
// usage when the reply reports it. May throw nlohmann::json::exception for a reply without the
// fields it needs.
using ReadReply =
    std::function<void(const nlohmann::json& reply, Response& r, std::optional<Usage>& usage)>;
// A whole (non-streamed) reply as a Response, or the error it amounts to, in this order: the
// transport failed, the status is not 2xx, the body is no JSON object, `is_error` says it is the
// API's error reply, or `read` found no `shape` in it (e.g. "content blocks"). Sets the model and
// id (from the reply, else the endpoint's), the usage (else estimated), the time to the first byte,
// and passes the text to the sink.
std::expected<Response, AttemptError> whole_response(const HttpResponse& res,
                                                     const HttpRequest& http, const Endpoint& ep,
                                                     const Request& req, StreamSink* sink,
                                                     bool (*is_error)(const nlohmann::json&),
                                                     std::string_view shape, const ReadReply& read);
// The error a finished stream amounts to, if any, in this order: the reader stopped it
// (`reader_error`, retryable or not), the status is not 2xx, the transport failed, or the stream
// ended before `end_marker` was seen (`complete` false: truncated).
std::optional<AttemptError> stream_error(const HttpResponse& res, const HttpRequest& http,
                                         const Endpoint& ep,
                                         const std::optional<std::string>& reader_error,
                                         bool retryable, bool complete,
                                         std::string_view end_marker);
// The usage the reply reported, else one estimated from the request and the reply's text.
void set_usage(Response& r, const Request& req, const std::optional<Usage>& reported);

}  // namespace wire

}  // namespace ok::llm
