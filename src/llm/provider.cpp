#include "llm/provider.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <ctime>
#include <nlohmann/json.hpp>

#include "llm/redact.hpp"

namespace ok::llm {

using util::ErrorKind;

std::unique_ptr<Provider> make_provider(const Endpoint& endpoint) {
  if (endpoint.provider.api == Api::kAnthropic) return make_anthropic_provider(endpoint);
  return make_openai_provider(endpoint);
}

namespace wire {

bool is_success(long status) {
  return status >= 200 && status < 300;
}

std::optional<double> parse_retry_after(const std::map<std::string, std::string>& headers) {
  auto number = [](const std::string& s) -> std::optional<double> {
    double v = 0;
    const auto* end = s.data() + s.size();
    auto [p, ec] = std::from_chars(s.data(), end, v);
    if (ec != std::errc() || p != end || v < 0) return std::nullopt;
    return v;
  };
  if (auto it = headers.find("retry-after-ms"); it != headers.end())
    if (auto v = number(it->second)) return *v / 1000.0;
  auto it = headers.find("retry-after");
  if (it == headers.end()) return std::nullopt;
  if (auto v = number(it->second)) return *v;
  std::tm tm{};
  if (strptime(it->second.c_str(), "%a, %d %b %Y %H:%M:%S", &tm) == nullptr) return std::nullopt;
  const double delta = std::difftime(timegm(&tm), std::time(nullptr));
  return delta > 0 ? delta : 0.0;
}

std::string api_error_message(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object()) {
    const auto* e = j.contains("error") ? &j["error"] : &j;
    if (e->is_object() && e->contains("message") && (*e)["message"].is_string())
      return (*e)["message"].get<std::string>();
    if (e->is_string()) return e->get<std::string>();
  }
  std::string s(body.substr(0, 300));
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s.empty() ? std::string("(empty body)") : s;
}

namespace {

AttemptError make(const Endpoint& ep, ErrorKind kind, const std::string& msg, bool retryable,
                  long status = 0) {
  AttemptError e;
  e.error = util::Error{kind, Redactor(ep.api_key).apply(msg)};
  e.retryable = retryable;
  e.http_status = status;
  return e;
}

std::string key_hint(const Endpoint& ep) {
  std::string vars = ep.provider.key_env.empty() ? std::string("OPENKERNEL_API_KEY")
                                                 : ep.provider.key_env + " or OPENKERNEL_API_KEY";
  if (ep.key_source == "none needed") return fmt::format("the server needs a key: set {}", vars);
  return fmt::format(
      "the key came from {}; set a valid one in {} or run `openkernel config "
      "--api-key KEY`",
      ep.key_source, vars);
}

}  // namespace

AttemptError status_error(const HttpResponse& res, const Endpoint& ep) {
  const long s = res.status;
  const std::string msg = api_error_message(res.body);
  const std::string where = fmt::format("{} ({})", ep.provider.name, ep.base_url);
  if (s == 401 || s == 403)
    return make(
        ep, ErrorKind::kAuth,
        fmt::format("{} rejected the API key (HTTP {}): {}; {}", where, s, msg, key_hint(ep)),
        false, s);
  if (s == 429) {
    const bool quota = res.body.find("insufficient_quota") != std::string::npos;
    auto e = make(ep, ErrorKind::kRateLimited,
                  fmt::format("{} is rate limiting (HTTP 429){}: {}", where,
                              quota ? ", out of quota" : "", msg),
                  !quota, s);
    e.retry_after_s = parse_retry_after(res.headers);
    return e;
  }
  if (s == 408 || s == 409) {
    auto e = make(ep, ErrorKind::kNetwork, fmt::format("{} answered HTTP {}: {}", where, s, msg),
                  true, s);
    e.retry_after_s = parse_retry_after(res.headers);
    return e;
  }
  if (s >= 500) {
    auto e = make(ep, ErrorKind::kServer, fmt::format("{} failed with HTTP {}: {}", where, s, msg),
                  true, s);
    e.retry_after_s = parse_retry_after(res.headers);
    return e;
  }
  if (s == 404)
    return make(ep, ErrorKind::kBadInput,
                fmt::format("{} does not know model {} or the URL (HTTP 404): {}; check --model "
                            "and --base-url",
                            where, ep.model_id, msg),
                false, s);
  if (s >= 400)
    return make(ep, ErrorKind::kBadInput,
                fmt::format("{} rejected the request (HTTP {}): {}", where, s, msg), false, s);
  return make(ep, ErrorKind::kProtocol,
              fmt::format("{} answered with unexpected HTTP status {}", where, s), false, s);
}

AttemptError transport_error(const HttpResponse& res, const Endpoint& ep, const Timeouts& to) {
  const std::string& why = res.transport_message;
  switch (res.transport) {
    case Transport::kConnectFailed:
      return make(ep, ErrorKind::kNetwork,
                  fmt::format("cannot connect to {}: {}", ep.base_url, why), true);
    case Transport::kConnectionLost:
      if (res.streamed_bytes > 0)
        return make(ep, ErrorKind::kProtocol,
                    fmt::format("the stream from {} was cut off after {} bytes: {}",
                                ep.provider.name, res.streamed_bytes, why),
                    true);
      return make(ep, ErrorKind::kNetwork,
                  fmt::format("the connection to {} broke: {}", ep.base_url, why), true);
    case Transport::kConnectTimeout:
      return make(ep, ErrorKind::kTimeout,
                  fmt::format("no connection to {} within {} ms", ep.base_url, to.connect.count()),
                  true);
    case Transport::kFirstTokenTimeout:
      return make(ep, ErrorKind::kTimeout,
                  fmt::format("no first token from {} within {} ms", ep.provider.name,
                              to.first_token.count()),
                  true);
    case Transport::kIdleTimeout:
      return make(ep, ErrorKind::kTimeout,
                  fmt::format("the stream from {} stalled for more than {} ms", ep.provider.name,
                              to.idle.count()),
                  true);
    case Transport::kTotalTimeout:
      return make(ep, ErrorKind::kTimeout,
                  fmt::format("the reply from {} took longer than {} ms", ep.provider.name,
                              to.total.count()),
                  true);
    case Transport::kCancelled:
      return make(ep, ErrorKind::kCancelled, "the call was cancelled", false);
    case Transport::kBadUrl:
      return make(ep, ErrorKind::kUsage,
                  fmt::format("cannot use base URL {}: {}", ep.base_url, why), false);
    case Transport::kStoppedByReader:
      return make(ep, ErrorKind::kProtocol, "the reply could not be read", true);
    case Transport::kOk:
    case Transport::kOther:
      break;
  }
  return make(ep, ErrorKind::kNetwork, fmt::format("request to {} failed: {}", ep.base_url, why),
              false);
}

AttemptError protocol_error(const Endpoint& ep, const std::string& message, bool retryable) {
  return make(ep, ErrorKind::kProtocol, message, retryable);
}

int64_t estimate_input_tokens(const Request& req) {
  int64_t n = estimate_tokens(req.system);
  for (const auto& m : req.messages) n += estimate_tokens(m.content) + 4;
  if (req.json_schema) n += estimate_tokens(req.json_schema->dump());
  return n;
}

HttpRequest post(std::string url, std::vector<std::string> headers, std::string body,
                 const Request& req, const AttemptOptions& opts) {
  HttpRequest http;
  http.url = std::move(url);
  http.headers = std::move(headers);
  if (req.stream) http.headers.push_back("Accept: text/event-stream");
  http.body = std::move(body);
  http.stream = req.stream;
  http.timeouts = opts.timeouts;
  http.cancel = opts.cancel;
  return http;
}

int64_t max_output_tokens(const Request& req, const Endpoint& ep) {
  if (ep.info && ep.info->max_output_tokens > 0)
    return std::min<int64_t>(req.max_tokens, ep.info->max_output_tokens);
  return req.max_tokens;
}

std::expected<Response, AttemptError> whole_response(const HttpResponse& res,
                                                     const HttpRequest& http, const Endpoint& ep,
                                                     const Request& req, StreamSink* sink,
                                                     bool (*is_error)(const nlohmann::json&),
                                                     std::string_view shape,
                                                     const ReadReply& read) {
  if (res.transport != Transport::kOk)
    return std::unexpected(transport_error(res, ep, http.timeouts));
  if (!is_success(res.status)) return std::unexpected(status_error(res, ep));
  const nlohmann::json j = nlohmann::json::parse(res.body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return std::unexpected(
        protocol_error(ep, fmt::format("malformed JSON in the reply from {}: {}", ep.provider.name,
                                       res.body.substr(0, 120))));
  if (is_error(j))
    return std::unexpected(protocol_error(
        ep,
        fmt::format("{} returned an error: {}", ep.provider.name, api_error_message(res.body))));
  Response r;
  try {
    std::optional<Usage> usage;
    read(j, r, usage);
    r.model = j.value("model", ep.model_id);
    r.id = j.value("id", "");
    set_usage(r, req, usage);
  } catch (const nlohmann::json::exception&) {
    return std::unexpected(
        protocol_error(ep, fmt::format("the reply from {} has no {}: {}", ep.provider.name, shape,
                                       res.body.substr(0, 120))));
  }
  r.ttft_ms = res.first_byte_ms >= 0 ? std::optional<double>(res.first_byte_ms) : std::nullopt;
  if (sink && !r.text.empty()) sink->on_delta(r.text);
  return r;
}

std::optional<AttemptError> stream_error(const HttpResponse& res, const HttpRequest& http,
                                         const Endpoint& ep,
                                         const std::optional<std::string>& reader_error,
                                         bool retryable, bool complete,
                                         std::string_view end_marker) {
  if (reader_error) return protocol_error(ep, *reader_error, retryable);
  if (res.status != 0 && !is_success(res.status)) return status_error(res, ep);
  if (res.transport != Transport::kOk) return transport_error(res, ep, http.timeouts);
  if (!complete)
    return protocol_error(
        ep, fmt::format("the stream from {} ended without {} after {} bytes (truncated)",
                        ep.provider.name, end_marker, res.streamed_bytes));
  return std::nullopt;
}

void set_usage(Response& r, const Request& req, const std::optional<Usage>& reported) {
  if (reported) {
    r.usage = *reported;
    return;
  }
  r.usage.input_tokens = estimate_input_tokens(req);
  r.usage.output_tokens = estimate_tokens(r.text);
  r.usage.estimated = true;
}

}  // namespace wire

}  // namespace ok::llm
