// Registry, model and key resolution, costs, the ledger, redaction, Retry-After, the semaphore.
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "llm/accounting.hpp"
#include "llm/limiter.hpp"
#include "llm/provider.hpp"
#include "llm/redact.hpp"
#include "llm/registry.hpp"

namespace ok::llm {
namespace {

using util::ErrorKind;

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

const Registry& registry() {
  static const Registry r = [] {
    auto loaded = Registry::load_default();
    EXPECT_TRUE(loaded) << loaded.error().message;
    return loaded ? *loaded : Registry{};
  }();
  return r;
}

TEST(LlmRegistry, DefaultRegistryHasTheRecommendedModels) {
  for (const char* name :
       {"claude-sonnet-4-5", "claude-sonnet-4", "claude-opus-4-1", "claude-haiku-4-5", "gpt-5",
        "gpt-5-mini", "gpt-4.1", "o3", "deepseek-v3.1"}) {
    const ModelInfo* m = registry().find_model(name);
    ASSERT_NE(m, nullptr) << name;
    EXPECT_GT(m->context_window, 0) << name;
    EXPECT_GT(m->price_in_per_mtok, 0) << name;
    EXPECT_GT(m->price_out_per_mtok, m->price_in_per_mtok) << name;
    EXPECT_FALSE(m->strengths.empty()) << name;
    EXPECT_TRUE(m->cost_tier == "low" || m->cost_tier == "medium" || m->cost_tier == "high");
  }
  EXPECT_EQ(registry().find_model("deepseek-v3.1")->provider, "openrouter");
}

TEST(LlmRegistry, MalformedRegistryIsBadInput) {
  for (const char* text :
       {"", "{", R"({"providers": []})", R"({"providers": [], "models": [{"name": "x"}]})",
        R"({"providers": [{"name": "p", "api": "grpc", "base_url": "x"}], "models": []})",
        R"({"providers": [], "models": [{"name": "m", "provider": "nobody", "id": "m",
            "context_window": 1, "price_in_per_mtok": 1, "price_out_per_mtok": 1}]})"}) {
    auto r = Registry::parse(text, "test.json");
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
    EXPECT_NE(r.error().message.find("test.json"), std::string::npos) << r.error().message;
  }
}

TEST(LlmResolve, RegistryNameAndAlias) {
  auto ep = resolve_endpoint(registry(), {"claude-sonnet-4"},
                             env_of({{"ANTHROPIC_API_KEY", "k-anthropic"}}));
  ASSERT_TRUE(ep) << ep.error().message;
  EXPECT_EQ(ep->provider.api, Api::kAnthropic);
  EXPECT_EQ(ep->model_id, "claude-sonnet-4-20250514");
  EXPECT_EQ(ep->base_url, "https://api.anthropic.com");
  EXPECT_EQ(ep->api_key, "k-anthropic");
  EXPECT_EQ(ep->key_source, "$ANTHROPIC_API_KEY");
  auto alias = resolve_model(registry(), "sonnet", std::nullopt);
  ASSERT_TRUE(alias);
  EXPECT_EQ(alias->display, "claude-sonnet-4-5");
}

TEST(LlmResolve, ProviderSlashModelFindsPrices) {
  auto ep = resolve_model(registry(), "anthropic/claude-sonnet-4-5", std::nullopt);
  ASSERT_TRUE(ep);
  EXPECT_EQ(ep->model_id, "claude-sonnet-4-5");
  ASSERT_TRUE(ep->info);
  EXPECT_EQ(ep->info->price_in_per_mtok, 3.0);
  auto gpt = resolve_model(registry(), "openai/gpt-5", std::nullopt);
  ASSERT_TRUE(gpt);
  EXPECT_TRUE(gpt->provider.max_completion_tokens);
  EXPECT_TRUE(gpt->info && gpt->info->reasoning);
  auto deep = resolve_model(registry(), "openrouter/deepseek/deepseek-chat-v3.1", std::nullopt);
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->model_id, "deepseek/deepseek-chat-v3.1");
  EXPECT_EQ(deep->base_url, "https://openrouter.ai/api/v1");
  EXPECT_TRUE(deep->info);
}

TEST(LlmResolve, AnyModelOnACompatibleServer) {
  auto ep =
      resolve_endpoint(registry(), {"openai/qwen3-coder", "http://127.0.0.1:8000/v1/"}, env_of({}));
  ASSERT_TRUE(ep) << ep.error().message;
  EXPECT_EQ(ep->model_id, "qwen3-coder");
  EXPECT_EQ(ep->base_url, "http://127.0.0.1:8000/v1");
  EXPECT_FALSE(ep->info);
  EXPECT_FALSE(ep->provider.max_completion_tokens);
  EXPECT_EQ(ep->api_key, "");
  EXPECT_EQ(ep->key_source, "none needed");
}

TEST(LlmResolve, UnknownModelOrProviderSaysWhatToDo) {
  auto bare = resolve_model(registry(), "gpt-17", std::nullopt);
  ASSERT_FALSE(bare);
  EXPECT_EQ(bare.error().kind, ErrorKind::kUsage);
  EXPECT_NE(bare.error().message.find("openkernel models"), std::string::npos);
  auto prov = resolve_model(registry(), "acme/model", std::nullopt);
  ASSERT_FALSE(prov);
  EXPECT_NE(prov.error().message.find("anthropic"), std::string::npos);
  EXPECT_NE(prov.error().message.find("--base-url"), std::string::npos);
  EXPECT_FALSE(resolve_model(registry(), "openai/", std::nullopt));
  EXPECT_FALSE(resolve_model(registry(), "", std::nullopt));
  auto url = resolve_model(registry(), "openai/x", std::string("localhost:8000"));
  ASSERT_FALSE(url);
  EXPECT_EQ(url.error().kind, ErrorKind::kUsage);
}

TEST(LlmResolve, KeyOrder) {
  const std::map<std::string, std::string> all = {
      {"OPENKERNEL_API_KEY", "k-ok"}, {"OPENAI_API_KEY", "k-openai"}, {"MY_KEY", "k-mine"}};
  EndpointSpec spec{"gpt-5"};
  spec.config_api_key = "k-config";
  EXPECT_EQ(resolve_endpoint(registry(), spec, env_of(all))->api_key, "k-ok");
  EXPECT_EQ(resolve_endpoint(registry(), spec, env_of({{"OPENAI_API_KEY", "k-openai"}}))->api_key,
            "k-openai");
  auto cfg = resolve_endpoint(registry(), spec, env_of({{"ANTHROPIC_API_KEY", "k-wrong"}}));
  EXPECT_EQ(cfg->api_key, "k-config");
  EXPECT_EQ(cfg->key_source, "the config file");
  spec.api_key_env = "MY_KEY";
  auto mine = resolve_endpoint(registry(), spec, env_of(all));
  EXPECT_EQ(mine->api_key, "k-mine");
  EXPECT_EQ(mine->key_source, "$MY_KEY");
  spec.api_key_env = "UNSET_VAR";
  auto unset = resolve_endpoint(registry(), spec, env_of(all));
  ASSERT_FALSE(unset);
  EXPECT_NE(unset.error().message.find("UNSET_VAR"), std::string::npos);
}

TEST(LlmResolve, MissingKeyNamesTheVariables) {
  auto ep = resolve_endpoint(registry(), {"claude-opus-4-1"}, env_of({}));
  ASSERT_FALSE(ep);
  EXPECT_EQ(ep.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(util::exit_code(ep.error()), 2);
  EXPECT_NE(ep.error().message.find("ANTHROPIC_API_KEY"), std::string::npos);
  EXPECT_NE(ep.error().message.find("openkernel config --api-key"), std::string::npos);
  // A remote compatible server needs a key; a local one does not.
  EXPECT_FALSE(
      resolve_endpoint(registry(), {"openai/m", "https://llm.example.com/v1"}, env_of({})));
  EXPECT_TRUE(resolve_endpoint(registry(), {"openai/m", "http://localhost:1234/v1"}, env_of({})));
  EXPECT_TRUE(resolve_endpoint(registry(), {"ollama/llama3"}, env_of({})));
}

TEST(LlmResolve, LoopbackUrls) {
  EXPECT_TRUE(is_loopback_url("http://127.0.0.1:8000/v1"));
  EXPECT_TRUE(is_loopback_url("http://localhost/v1"));
  EXPECT_TRUE(is_loopback_url("http://[::1]:8080"));
  EXPECT_TRUE(is_loopback_url("http://user@127.1.2.3"));
  EXPECT_FALSE(is_loopback_url("https://api.openai.com/v1"));
  EXPECT_FALSE(is_loopback_url("http://localhost.evil.com/v1"));
  EXPECT_FALSE(is_loopback_url("http://10.0.0.1:8000"));
  EXPECT_FALSE(is_loopback_url("127.0.0.1:8000"));
}

TEST(LlmCost, FromUsageAndPrices) {
  ModelInfo m;
  m.price_in_per_mtok = 3;
  m.price_out_per_mtok = 15;
  m.price_cached_in_per_mtok = 0.3;
  Usage u{1'000'000, 100'000, 500'000, false, std::nullopt};
  Cost c = compute_cost(m, u);
  ASSERT_TRUE(c.usd);
  EXPECT_DOUBLE_EQ(*c.usd, 1.5 + 0.15 + 1.5);
  EXPECT_FALSE(c.estimated);
  u.estimated = true;
  EXPECT_TRUE(compute_cost(m, u).estimated);
  u.reported_cost_usd = 0.25;
  c = compute_cost(m, u);
  EXPECT_DOUBLE_EQ(*c.usd, 0.25);
  EXPECT_FALSE(c.estimated);
  EXPECT_FALSE(compute_cost(std::nullopt, Usage{10, 10}).usd);
}

TEST(LlmLedger, TotalsAndBudget) {
  Ledger ledger(0.01);
  EXPECT_TRUE(ledger.admit());
  Response r;
  r.usage = {100, 50};
  r.cost_usd = 0.006;
  ledger.add(r);
  EXPECT_TRUE(ledger.admit());
  r.cost_estimated = true;
  ledger.add(r);
  ledger.add_failure();
  r.cost_usd.reset();
  ledger.add(r);
  const Totals t = ledger.totals();
  EXPECT_EQ(t.calls, 4);
  EXPECT_EQ(t.failed_calls, 1);
  EXPECT_EQ(t.input_tokens, 300);
  EXPECT_EQ(t.output_tokens, 150);
  EXPECT_DOUBLE_EQ(t.cost_usd, 0.012);
  EXPECT_TRUE(t.cost_estimated);
  EXPECT_EQ(t.unpriced_calls, 1);
  auto no = ledger.admit();
  ASSERT_FALSE(no);
  EXPECT_EQ(no.error().kind, ErrorKind::kBudget);
  EXPECT_NE(no.error().message.find("--budget-usd"), std::string::npos);
  EXPECT_TRUE(Ledger().admit());
}

TEST(LlmRedact, RemovesEveryOccurrence) {
  Redactor r("sk-secret-123456");
  EXPECT_EQ(r.apply("a sk-secret-123456 b sk-secret-123456"), "a [REDACTED] b [REDACTED]");
  EXPECT_EQ(r.apply("nothing here"), "nothing here");
  EXPECT_EQ(Redactor("abc").apply("abc"), "abc");  // too short to be a key
  EXPECT_EQ(mask_key("sk-ant-0123456789abcdefWXYZ"), "****WXYZ");
  EXPECT_EQ(mask_key("short"), "****");
  EXPECT_EQ(mask_key(""), "(not set)");
}

TEST(LlmRetryAfter, SecondsMillisecondsAndDates) {
  using wire::parse_retry_after;
  EXPECT_EQ(parse_retry_after({{"retry-after", "7"}}), 7.0);
  EXPECT_EQ(parse_retry_after({{"retry-after", "1.5"}}), 1.5);
  EXPECT_EQ(parse_retry_after({{"retry-after-ms", "250"}, {"retry-after", "9"}}), 0.25);
  EXPECT_EQ(parse_retry_after({{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}}), 0.0);
  auto future = parse_retry_after({{"retry-after", "Fri, 01 Jan 2100 00:00:00 GMT"}});
  ASSERT_TRUE(future);
  EXPECT_GT(*future, 1e9);
  EXPECT_FALSE(parse_retry_after({{"retry-after", "soon"}}));
  EXPECT_FALSE(parse_retry_after({{"retry-after", "-3"}}));
  EXPECT_FALSE(parse_retry_after({}));
}

TEST(LlmApiError, MessageFromEitherApiOrRawBody) {
  using wire::api_error_message;
  EXPECT_EQ(api_error_message(R"({"error": {"message": "bad model", "type": "x"}})"), "bad model");
  EXPECT_EQ(api_error_message(R"({"type": "error", "error": {"type": "overloaded_error",
            "message": "Overloaded"}})"),
            "Overloaded");
  EXPECT_EQ(api_error_message("<html>Bad\nGateway</html>"), "<html>Bad Gateway</html>");
  EXPECT_EQ(api_error_message(""), "(empty body)");
}

TEST(LlmSemaphore, CapsHoldersAndHonoursCancel) {
  Semaphore sem(2);
  std::atomic<bool> cancel{false};
  std::atomic<int> now{0}, peak{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&] {
      ASSERT_TRUE(sem.acquire(&cancel));
      Permit p(&sem);
      const int v = ++now;
      int m = peak.load();
      while (v > m && !peak.compare_exchange_weak(m, v)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      --now;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(peak.load(), 2);
  EXPECT_EQ(sem.in_use(), 0);

  Semaphore one(1);
  ASSERT_TRUE(one.acquire(nullptr));
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cancel = true;
  });
  EXPECT_FALSE(one.acquire(&cancel));
  canceller.join();
  one.release();
}

}  // namespace
}  // namespace ok::llm
