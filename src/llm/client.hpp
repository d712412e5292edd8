// The LLM client the engine calls: one endpoint (model, URL, key) plus retries with backoff,
// a per-provider concurrency limit, cancellation, cost accounting against a Ledger, recording of
// every call, and structured (JSON-schema) replies with one repair request.
//
// A Client owns its Provider and borrows the Ledger and CallRecorder, which must outlive it.
// complete() and complete_json() may be called from many threads at once. Every error message it
// returns or records has the API key redacted.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "llm/accounting.hpp"
#include "llm/http.hpp"
#include "llm/limiter.hpp"
#include "llm/provider.hpp"
#include "llm/recorder.hpp"
#include "llm/redact.hpp"
#include "llm/registry.hpp"
#include "llm/types.hpp"
#include "util/cancel.hpp"
#include "util/error.hpp"

namespace ok::llm {

// Retries on 408/409/429/5xx, connection errors, timeouts and truncated or malformed replies;
// never on 400/401/403/404. Delay before retry n (1-based): base * 2^(n-1), capped at max_delay,
// times a random factor in [0.5, 1]; at least what Retry-After asks.
struct RetryPolicy {
  int max_retries = 4;
  std::chrono::milliseconds base_delay{1000};
  std::chrono::milliseconds max_delay{60'000};
  // A Retry-After longer than this fails the call at once instead of waiting.
  std::chrono::milliseconds max_retry_after{120'000};
};

struct ClientOptions {
  Timeouts timeouts;
  RetryPolicy retry;
  int max_concurrency = 8;  // per provider and base URL, shared by every Client in the process
  const std::atomic<bool>* cancel = &util::cancel_flag();  // Ctrl-C by default
  Ledger* ledger = nullptr;                                // session totals and budget; optional
  CallRecorder* recorder = nullptr;                        // where calls are recorded; optional
};

struct StructuredReply {
  nlohmann::json value;
  Response response;  // of the last call
  bool repaired = false;
};

class Client {
 public:
  Client(Endpoint endpoint, ClientOptions options);
  // With a given provider (a fake in tests of the engine).
  Client(Endpoint endpoint, std::unique_ptr<Provider> provider, ClientOptions options);

  util::Result<Response> complete(const Request& req, StreamSink* sink = nullptr);
  // Asks for JSON matching `schema`, validates it, and on failure makes one repair request.
  util::Result<StructuredReply> complete_json(const Request& req, const nlohmann::json& schema,
                                              StreamSink* sink = nullptr);

  const Endpoint& endpoint() const { return endpoint_; }
  const ClientOptions& options() const { return options_; }

 private:
  util::Result<Response> call(const Request& req, StreamSink* sink);
  void record(const Request& req, const util::Result<Response>& result, long http_status,
              int attempts, double latency_ms, const std::string& started_at);

  Endpoint endpoint_;
  std::unique_ptr<Provider> provider_;
  ClientOptions options_;
  Redactor redactor_;
  Semaphore* semaphore_;
};

}  // namespace ok::llm
