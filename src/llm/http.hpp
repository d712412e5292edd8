// One HTTP POST over libcurl with the LLM layer's timeouts and cancellation.
//
// Each call owns its curl handles (RAII) and may run on any thread; calls share nothing. Timeouts:
// connect and total by curl; first token and idle gap (streaming only), and the cancel flag, by
// curl's progress callback and a poll loop that wakes at least every 100 ms.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ok::llm {

struct Timeouts {
  std::chrono::milliseconds connect{10'000};
  std::chrono::milliseconds first_token{180'000};  // streaming: until the first token; 0 = none
  std::chrono::milliseconds idle{120'000};  // streaming: longest silence after the first token
  std::chrono::milliseconds total{900'000};
};

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  bool stream = false;
  Timeouts timeouts;
  const std::atomic<bool>* cancel = nullptr;
};

// Receives a 2xx body while it arrives (streaming). Runs on the calling thread.
class HttpReader {
 public:
  virtual ~HttpReader() = default;
  // Returns false to stop the transfer.
  virtual bool on_data(std::string_view chunk) = 0;
  // Whether the first token arrived (the first-token timeout stops applying).
  virtual bool first_token_seen() const = 0;
};

enum class Transport {
  kOk,
  kConnectFailed,   // could not connect or resolve
  kConnectionLost,  // the connection broke during the exchange
  kConnectTimeout,
  kFirstTokenTimeout,
  kIdleTimeout,
  kTotalTimeout,
  kCancelled,
  kStoppedByReader,
  kBadUrl,
  kOther,
};

struct HttpResponse {
  Transport transport = Transport::kOk;
  std::string transport_message;               // curl's description when transport != kOk
  long status = 0;                             // 0 when no response arrived
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;           // whole body, or the error body of a non-2xx streamed reply
  size_t streamed_bytes = 0;  // bytes handed to the reader
  double first_byte_ms = -1;  // from the start of the call; -1 when nothing arrived
  double elapsed_ms = 0;
};

// Sends the POST and waits for the whole reply. With a reader, a 2xx body goes to it and not
// into `body`.
HttpResponse http_post(const HttpRequest& request, HttpReader* reader);

}  // namespace ok::llm
