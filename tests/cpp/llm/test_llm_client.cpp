// The Client against a real loopback server speaking both APIs.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "fake_server.hpp"
#include "llm/client.hpp"

namespace ok::llm {
namespace {

using testing::Behaviour;
using testing::FakeLlmServer;
using testing::Step;
using util::ErrorKind;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kKey = "sk-test-0123456789abcdefSECRET";

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

ModelInfo priced_model(const std::string& provider) {
  ModelInfo m;
  m.name = "test-model";
  m.provider = provider;
  m.id = "test-model-id";
  m.context_window = 1000;
  m.price_in_per_mtok = 2;
  m.price_out_per_mtok = 10;
  return m;
}

Endpoint endpoint_for(Api api, const FakeLlmServer& server, bool priced = true) {
  Endpoint ep;
  ep.provider.api = api;
  ep.provider.name = api == Api::kAnthropic ? "anthropic" : "openai";
  ep.provider.key_env = api == Api::kAnthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
  ep.base_url = api == Api::kAnthropic ? server.anthropic_url() : server.openai_url();
  ep.model_id = "test-model-id";
  ep.display = "test-model";
  ep.api_key = kKey;
  ep.key_source = "$" + ep.provider.key_env;
  if (priced) ep.info = priced_model(ep.provider.name);
  return ep;
}

ClientOptions quick_options(std::atomic<bool>* cancel) {
  ClientOptions o;
  o.retry.max_retries = 2;
  o.retry.base_delay = milliseconds(10);
  o.retry.max_delay = milliseconds(40);
  o.retry.max_retry_after = milliseconds(5000);
  o.timeouts.connect = milliseconds(2000);
  o.timeouts.first_token = milliseconds(5000);
  o.timeouts.total = milliseconds(10000);
  o.cancel = cancel;
  return o;
}

Request ping(bool stream) {
  Request r;
  r.system = "be brief";
  r.messages.push_back({Role::kUser, "ping"});
  r.max_tokens = 50;
  r.temperature = 0.0;
  r.stream = stream;
  return r;
}

// Collects what a sink receives, starting over on each retry.
struct Collector : StreamSink {
  std::string text;
  int deltas = 0;
  int retries = 0;
  void on_delta(std::string_view d) override {
    text += d;
    ++deltas;
  }
  void on_retry(int, const util::Error&) override {
    text.clear();
    ++retries;
  }
};

class LlmClient : public ::testing::TestWithParam<Api> {
 protected:
  Api api() const { return GetParam(); }
  Client client(ClientOptions o) { return Client(endpoint_for(api(), server_), o); }
  Client client() { return client(quick_options(&cancel_)); }

  FakeLlmServer server_;
  std::atomic<bool> cancel_{false};
};

TEST_P(LlmClient, NonStreamingRoundTrip) {
  auto c = client();
  Collector sink;
  auto r = c.complete(ping(false), &sink);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->text, "pong");
  EXPECT_EQ(sink.text, "pong");
  EXPECT_EQ(r->stop_reason, "end");
  EXPECT_EQ(r->model, "test-model-id");
  EXPECT_EQ(r->usage.input_tokens, 12);
  EXPECT_EQ(r->usage.output_tokens, 3);
  EXPECT_FALSE(r->usage.estimated);
  ASSERT_TRUE(r->cost_usd);
  EXPECT_DOUBLE_EQ(*r->cost_usd, (12 * 2.0 + 3 * 10.0) / 1e6);
  EXPECT_FALSE(r->cost_estimated);
  EXPECT_EQ(r->attempts, 1);
  EXPECT_TRUE(r->ttft_ms);
  EXPECT_GT(r->latency_ms, 0);

  const auto got = server_.received();
  ASSERT_EQ(got.size(), 1u);
  const auto& body = got[0].body;
  EXPECT_EQ(body["model"], "test-model-id");
  EXPECT_EQ(body["max_tokens"], 50);
  EXPECT_EQ(body["temperature"], 0.0);
  if (api() == Api::kAnthropic) {
    EXPECT_EQ(got[0].path, "/v1/messages");
    EXPECT_EQ(got[0].headers.at("x-api-key"), kKey);
    EXPECT_EQ(got[0].headers.at("anthropic-version"), "2023-06-01");
    EXPECT_EQ(body["system"], "be brief");
    EXPECT_EQ(body["messages"][0]["content"], "ping");
  } else {
    EXPECT_EQ(got[0].path, "/v1/chat/completions");
    EXPECT_EQ(got[0].headers.at("Authorization"), std::string("Bearer ") + kKey);
    EXPECT_EQ(body["messages"][0]["role"], "system");
    EXPECT_EQ(body["messages"][1]["content"], "ping");
  }
}

TEST_P(LlmClient, StreamingDeliversDeltas) {
  server_.set_reply("a longer streamed reply");
  auto c = client();
  Collector sink;
  auto r = c.complete(ping(true), &sink);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->text, "a longer streamed reply");
  EXPECT_EQ(sink.text, r->text);
  EXPECT_GT(sink.deltas, 5);
  EXPECT_EQ(r->usage.input_tokens, 12);
  EXPECT_EQ(r->usage.output_tokens, 3);
  EXPECT_FALSE(r->usage.estimated);
  EXPECT_TRUE(r->ttft_ms);
  EXPECT_EQ(server_.received()[0].headers.at("Accept"), "text/event-stream");
  if (api() == Api::kOpenAI) {
    EXPECT_EQ(server_.received()[0].body["stream_options"]["include_usage"], true);
  }
}

TEST_P(LlmClient, MissingUsageIsEstimatedAndMarked) {
  server_.script({Step{Behaviour::kNoUsage}, Step{Behaviour::kNoUsage}});
  auto c = client();
  for (bool stream : {false, true}) {
    auto r = c.complete(ping(stream));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->usage.estimated);
    EXPECT_GT(r->usage.input_tokens, 0);
    EXPECT_EQ(r->usage.output_tokens, 1);  // "pong"
    ASSERT_TRUE(r->cost_usd);
    EXPECT_TRUE(r->cost_estimated);
  }
}

TEST_P(LlmClient, RetriesRateLimitHonouringRetryAfter) {
  server_.script({Step{
      Behaviour::kStatus, 429, R"({"error": {"message": "slow down"}})", {{"Retry-After", "1"}}}});
  auto c = client();
  const auto t0 = Clock::now();
  auto r = c.complete(ping(false));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_GE(ms_since(t0), 1000);
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(server_.hits(), 2);
}

TEST_P(LlmClient, RetryAfterBeyondTheLimitFailsAtOnce) {
  server_.script({Step{Behaviour::kStatus,
                       429,
                       R"({"error": {"message": "quota window"}})",
                       {{"Retry-After", "3600"}}}});
  auto c = client();
  auto r = c.complete(ping(false));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kRateLimited);
  EXPECT_NE(r.error().message.find("3600"), std::string::npos) << r.error().message;
  EXPECT_EQ(server_.hits(), 1);
}

TEST_P(LlmClient, RetriesServerErrorsThenSucceeds) {
  server_.script({Step{Behaviour::kStatus, 500, "oops"}, Step{Behaviour::kStatus, 503, ""}});
  auto c = client();
  auto r = c.complete(ping(false));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->attempts, 3);
}

TEST_P(LlmClient, GivesUpOnPersistentServerErrors) {
  std::vector<Step> steps(5, Step{Behaviour::kStatus, 500, R"({"error": {"message": "down"}})"});
  server_.script(steps);
  auto c = client();
  auto r = c.complete(ping(true));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kServer);
  EXPECT_NE(r.error().message.find("HTTP 500"), std::string::npos);
  EXPECT_NE(r.error().message.find("gave up after 3 attempts"), std::string::npos);
  EXPECT_EQ(server_.hits(), 3);
}

TEST_P(LlmClient, NoRetryOnAuthFailure) {
  server_.script({Step{Behaviour::kStatus, 401, R"({"error": {"message": "invalid x-api-key"}})"}});
  auto c = client();
  auto r = c.complete(ping(false));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kAuth);
  EXPECT_NE(r.error().message.find("invalid x-api-key"), std::string::npos);
  const std::string var = api() == Api::kAnthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
  EXPECT_NE(r.error().message.find("$" + var), std::string::npos) << r.error().message;
  EXPECT_EQ(server_.hits(), 1);
}

TEST_P(LlmClient, NoRetryOnBadRequestOrForbidden) {
  server_.script({Step{Behaviour::kStatus, 400, R"({"error": {"message": "max_tokens too big"}})"},
                  Step{Behaviour::kStatus, 403, "{}"}});
  auto c = client();
  auto bad = c.complete(ping(false));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(bad.error().message.find("max_tokens too big"), std::string::npos);
  auto forbidden = c.complete(ping(false));
  ASSERT_FALSE(forbidden);
  EXPECT_EQ(forbidden.error().kind, ErrorKind::kAuth);
  EXPECT_EQ(server_.hits(), 2);
}

TEST_P(LlmClient, ErrorMessagesNeverHoldTheKey) {
  server_.script({Step{Behaviour::kEchoKey401}});
  auto c = client();
  auto r = c.complete(ping(false));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kAuth);
  EXPECT_EQ(r.error().message.find(kKey), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("[REDACTED]"), std::string::npos) << r.error().message;
}

TEST_P(LlmClient, MalformedJsonIsRetriedThenReported) {
  server_.script({Step{Behaviour::kMalformed}});
  auto c = client();
  auto ok = c.complete(ping(false));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->attempts, 2);
  server_.script(std::vector<Step>(3, Step{Behaviour::kMalformed}));
  auto bad = c.complete(ping(false));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::kProtocol);
  EXPECT_NE(bad.error().message.find("malformed JSON"), std::string::npos);
  server_.script(std::vector<Step>(3, Step{Behaviour::kMalformed}));
  auto stream = c.complete(ping(true));
  ASSERT_FALSE(stream);
  EXPECT_EQ(stream.error().kind, ErrorKind::kProtocol);
  EXPECT_NE(stream.error().message.find("malformed JSON in the stream"), std::string::npos);
}

TEST_P(LlmClient, CutStreamIsRetriedAndTheSinkStartsOver) {
  server_.set_reply("complete reply text");
  server_.script({Step{Behaviour::kCutStream}});
  auto c = client();
  Collector sink;
  auto r = c.complete(ping(true), &sink);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(sink.retries, 1);
  EXPECT_EQ(r->text, "complete reply text");
  EXPECT_EQ(sink.text, "complete reply text");
}

TEST_P(LlmClient, CutStreamReportedAsTruncated) {
  server_.script(std::vector<Step>(3, Step{Behaviour::kCutStream}));
  auto c = client();
  auto r = c.complete(ping(true));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kProtocol);
  EXPECT_NE(r.error().message.find("cut off"), std::string::npos) << r.error().message;
}

TEST_P(LlmClient, StreamWithoutEndMarkerIsTruncated) {
  server_.script(std::vector<Step>(3, Step{Behaviour::kNoEndMarker}));
  auto c = client();
  auto r = c.complete(ping(true));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kProtocol);
  EXPECT_NE(r.error().message.find("truncated"), std::string::npos) << r.error().message;
  EXPECT_EQ(server_.hits(), 3);
}

TEST_P(LlmClient, ErrorEventMidStreamIsRetried) {
  server_.script({Step{Behaviour::kErrorEvent}});
  auto c = client();
  auto r = c.complete(ping(true));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->attempts, 2);
  server_.script(std::vector<Step>(3, Step{Behaviour::kErrorEvent}));
  auto bad = c.complete(ping(true));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("mid-stream"), std::string::npos);
}

TEST_P(LlmClient, SlowFirstTokenTimesOut) {
  server_.script({Step{Behaviour::kOk, 200, "", {}, 3000}});
  auto o = quick_options(&cancel_);
  o.retry.max_retries = 0;
  o.timeouts.first_token = milliseconds(300);
  auto c = client(o);
  const auto t0 = Clock::now();
  auto r = c.complete(ping(true));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kTimeout);
  EXPECT_NE(r.error().message.find("first token"), std::string::npos);
  EXPECT_LT(ms_since(t0), 1500);
}

TEST_P(LlmClient, SlowFirstTokenWithinTheLimitIsMeasured) {
  server_.script({Step{Behaviour::kOk, 200, "", {}, 400}});
  auto c = client();
  auto r = c.complete(ping(true));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->ttft_ms);
  EXPECT_GE(*r->ttft_ms, 390);
  EXPECT_GE(r->latency_ms, *r->ttft_ms);
}

TEST_P(LlmClient, TotalTimeout) {
  server_.script({Step{Behaviour::kOk, 200, "", {}, 3000}});
  auto o = quick_options(&cancel_);
  o.retry.max_retries = 0;
  o.timeouts.total = milliseconds(300);
  auto c = client(o);
  auto r = c.complete(ping(false));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kTimeout);
}

TEST_P(LlmClient, CancelStopsACallInFlight) {
  server_.script({Step{Behaviour::kOk, 200, "", {}, 4000}});
  auto c = client();
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(200));
    cancel_ = true;
  });
  const auto t0 = Clock::now();
  auto r = c.complete(ping(true));
  canceller.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kCancelled);
  EXPECT_LT(ms_since(t0), 1500);
  EXPECT_EQ(server_.hits(), 1);
  auto after = c.complete(ping(false));
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().kind, ErrorKind::kCancelled);
  EXPECT_EQ(server_.hits(), 1);
}

TEST_P(LlmClient, CancelDuringBackoff) {
  server_.script({Step{Behaviour::kStatus, 503, "busy"}});
  auto o = quick_options(&cancel_);
  o.retry.base_delay = milliseconds(5000);
  o.retry.max_delay = milliseconds(5000);
  auto c = client(o);
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(200));
    cancel_ = true;
  });
  const auto t0 = Clock::now();
  auto r = c.complete(ping(false));
  canceller.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kCancelled);
  EXPECT_LT(ms_since(t0), 1500);
}

TEST_P(LlmClient, StructuredReply) {
  const auto schema = nlohmann::json::parse(
      R"({"type": "object", "required": ["verdict"], "properties": {"verdict": {"enum": ["yes", "no"]}}})");
  server_.set_reply(R"({"verdict": "yes"})");
  for (bool stream : {false, true}) {
    auto c = client();
    Request req = ping(stream);
    auto r = c.complete_json(req, schema);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->value["verdict"], "yes");
    EXPECT_FALSE(r->repaired);
  }
  const auto body = server_.received().back().body;
  if (api() == Api::kAnthropic) {
    EXPECT_EQ(body["tools"][0]["input_schema"], schema);
    EXPECT_EQ(body["tool_choice"]["type"], "tool");
  } else {
    EXPECT_EQ(body["response_format"]["type"], "json_schema");
    EXPECT_EQ(body["response_format"]["json_schema"]["schema"], schema);
  }
}

TEST_P(LlmClient, StructuredReplyRepairedOnce) {
  const auto schema = nlohmann::json::parse(
      R"({"type": "object", "required": ["tile"], "properties": {"tile": {"type": "integer"}}})");
  server_.script({Step{Behaviour::kOk, 200, "", {}, 0, R"({"tile": "big"})"},
                  Step{Behaviour::kOk, 200, "", {}, 0, R"({"tile": 64})"}});
  auto c = client();
  auto r = c.complete_json(ping(false), schema);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->value["tile"], 64);
  EXPECT_TRUE(r->repaired);
  ASSERT_EQ(server_.hits(), 2);
  const auto msgs = server_.received()[1].body["messages"];
  const std::string last = msgs.back()["content"];
  EXPECT_NE(last.find("$.tile: expected integer, got string"), std::string::npos) << last;
}

TEST_P(LlmClient, StructuredReplyFailsAfterOneRepair) {
  const auto schema = nlohmann::json::parse(R"({"type": "object", "required": ["tile"]})");
  server_.set_reply(R"({"other": 1})");
  auto c = client();
  auto r = c.complete_json(ping(false), schema);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kProtocol);
  EXPECT_NE(r.error().message.find("after one repair"), std::string::npos);
  EXPECT_EQ(server_.hits(), 2);
}

TEST_P(LlmClient, NonObjectSchemaTravelsWrapped) {
  const auto schema = nlohmann::json::parse(R"({"type": "array", "items": {"type": "string"}})");
  server_.set_reply(R"({"value": ["a", "b"]})");
  auto c = client();
  auto r = c.complete_json(ping(false), schema);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->value, nlohmann::json::parse(R"(["a", "b"])"));
}

TEST_P(LlmClient, BudgetStopsNewCalls) {
  Ledger ledger(1e-6);
  auto o = quick_options(&cancel_);
  o.ledger = &ledger;
  auto c = client(o);
  ASSERT_TRUE(c.complete(ping(false)));
  auto r = c.complete(ping(false));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kBudget);
  EXPECT_EQ(server_.hits(), 1);
  EXPECT_EQ(ledger.totals().calls, 1);
  EXPECT_EQ(ledger.totals().input_tokens, 12);
}

TEST_P(LlmClient, BudgetNeedsAKnownPrice) {
  Ledger ledger(5.0);
  auto o = quick_options(&cancel_);
  o.ledger = &ledger;
  Client c(endpoint_for(api(), server_, /*priced=*/false), o);
  auto r = c.complete(ping(false));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(server_.hits(), 0);
  Client unlimited(endpoint_for(api(), server_, false), quick_options(&cancel_));
  auto ok = unlimited.complete(ping(false));
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->cost_usd);
}

TEST_P(LlmClient, ConcurrencyIsCappedPerProvider) {
  server_.set_delay_ms(150);
  auto o = quick_options(&cancel_);
  o.max_concurrency = 2;
  auto c = client(o);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&] {
      if (c.complete(ping(false))) ++ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 6);
  EXPECT_EQ(server_.max_in_flight(), 2);
}

TEST_P(LlmClient, KeylessLocalServerGetsNoCredentials) {
  Endpoint ep = endpoint_for(api(), server_);
  ep.api_key.clear();
  ep.key_source = "none needed";
  Client c(ep, quick_options(&cancel_));
  ASSERT_TRUE(c.complete(ping(false)));
  const auto h = server_.received()[0].headers;
  EXPECT_EQ(h.count("Authorization"), 0u);
  EXPECT_EQ(h.count("x-api-key"), 0u);
}

INSTANTIATE_TEST_SUITE_P(BothApis, LlmClient, ::testing::Values(Api::kOpenAI, Api::kAnthropic),
                         [](const auto& info) {
                           return info.param == Api::kAnthropic ? "Anthropic" : "OpenAI";
                         });

// A port nothing listens on: bind one, then close it.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(LlmClientNetwork, ConnectionRefusedIsRetriedThenANetworkError) {
  std::atomic<bool> cancel{false};
  Endpoint ep;
  ep.provider.name = "openai";
  ep.base_url = "http://127.0.0.1:" + std::to_string(closed_port()) + "/v1";
  ep.model_id = "m";
  ep.api_key = kKey;
  Client c(ep, quick_options(&cancel));
  auto r = c.complete(ping(false));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kNetwork);
  EXPECT_NE(r.error().message.find("cannot connect"), std::string::npos);
  EXPECT_NE(r.error().message.find("3 attempts"), std::string::npos);
}

TEST(LlmClientNetwork, ProviderSeamAcceptsAFake) {
  struct Fake : Provider {
    int calls = 0;
    std::expected<Response, AttemptError> send(const Request&, const AttemptOptions&,
                                               StreamSink*) override {
      if (++calls == 1)
        return std::unexpected(AttemptError{{ErrorKind::kServer, "flaky"}, true, 500, 0.0});
      Response r;
      r.text = "fake";
      r.usage = {1, 1};
      return r;
    }
  };
  auto fake = std::make_unique<Fake>();
  Fake* raw = fake.get();
  std::atomic<bool> cancel{false};
  Endpoint ep;
  ep.provider.name = "fake";
  Client c(ep, std::move(fake), quick_options(&cancel));
  auto r = c.complete(ping(false));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, "fake");
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(raw->calls, 2);
}

}  // namespace
}  // namespace ok::llm
