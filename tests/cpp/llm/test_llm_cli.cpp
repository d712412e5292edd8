// The LLM commands end to end: models, config, llm ping against the loopback server.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/llm_commands.hpp"
#include "fake_server.hpp"
#include "store/sqlite.hpp"

namespace ok::cli {
namespace {

namespace fs = std::filesystem;
using llm::testing::Behaviour;
using llm::testing::FakeLlmServer;
using llm::testing::Step;

constexpr const char* kKey = "sk-cli-test-KEY-0123456789abcdef";

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class LlmCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ok_llm_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::setenv("OPENKERNEL_CONFIG", (dir_ / "config.toml").c_str(), 1);
    ::setenv("XDG_DATA_HOME", (dir_ / "data").c_str(), 1);
    for (const char* v : {"OPENKERNEL_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                          "OPENROUTER_API_KEY", "OPENKERNEL_HOME"})
      ::unsetenv(v);
  }
  void TearDown() override {
    ::unsetenv("OPENKERNEL_CONFIG");
    ::unsetenv("XDG_DATA_HOME");
    fs::remove_all(dir_);
  }

  Outcome run(std::vector<std::string> args, bool kernel_code = false) {
    CLI::App app{"test"};
    app.require_subcommand(0, 1);
    GlobalOptions g;
    Action action;
    if (kernel_code) {
      add_kernel_code_config_command(app, action);
    } else {
      add_llm_commands(app, g, action);
    }
    args.insert(args.begin(), kernel_code ? "kernel-code" : "openkernel");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    Outcome r;
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    r.code = run_app(app, static_cast<int>(argv.size()), argv.data(), action);
    r.out = ::testing::internal::GetCapturedStdout();
    r.err = ::testing::internal::GetCapturedStderr();
    return r;
  }

  int64_t recorded_calls() {
    auto db = store::Database::open(dir_ / "data/openkernel/openkernel.db");
    if (!db) return -1;
    auto q = db->prepare("SELECT count(*) FROM llm_calls");
    if (!q || !*q->step()) return -1;
    return q->col_int(0);
  }

  fs::path dir_;
};

TEST_F(LlmCli, ModelsListsTheRegistry) {
  Outcome table = run({"models"});
  EXPECT_EQ(table.code, 0);
  EXPECT_NE(table.out.find("claude-sonnet-4-5"), std::string::npos);
  EXPECT_NE(table.out.find("gpt-5-mini"), std::string::npos);
  EXPECT_NE(table.out.find("--base-url"), std::string::npos);
  Outcome json = run({"models", "--json"});
  ASSERT_EQ(json.code, 0);
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_GE(j["models"].size(), 9u);
  EXPECT_EQ(j["models"][0]["provider"], "anthropic");
  EXPECT_FALSE(j["providers"].empty());
}

TEST_F(LlmCli, ConfigStoresTheKeyInA0600FileAndMasksIt) {
  Outcome set = run({"config", "--model", "claude-sonnet-4-5", "--api-key", kKey});
  ASSERT_EQ(set.code, 0) << set.err;
  EXPECT_EQ(set.out.find(kKey), std::string::npos);
  const fs::path file = dir_ / "config.toml";
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  EXPECT_NE(slurp(file).find(kKey), std::string::npos);
  Outcome show = run({"config", "--show"});
  ASSERT_EQ(show.code, 0);
  EXPECT_NE(show.out.find("claude-sonnet-4-5"), std::string::npos);
  EXPECT_NE(show.out.find("****cdef"), std::string::npos);
  EXPECT_EQ(show.out.find(kKey), std::string::npos);
}

TEST_F(LlmCli, KernelCodeConfigToo) {
  Outcome set = run({"config", "--model", "gpt-5", "--api-key", kKey}, /*kernel_code=*/true);
  ASSERT_EQ(set.code, 0) << set.err;
  EXPECT_NE(set.out.find("kernel-code: saved model, api_key"), std::string::npos);
  EXPECT_NE(slurp(dir_ / "config.toml").find("gpt-5"), std::string::npos);
}

TEST_F(LlmCli, ConfigRejectsAnUnknownModel) {
  Outcome r = run({"config", "--model", "gpt-17"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown model 'gpt-17'"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "config.toml"));
}

TEST_F(LlmCli, PingWithoutAKeyFailsBeforeAnyWork) {
  FakeLlmServer server;
  Outcome r = run({"llm", "ping", "--model", "claude-haiku-4-5"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("ANTHROPIC_API_KEY"), std::string::npos) << r.err;
  Outcome remote =
      run({"llm", "ping", "--model", "openai/m", "--base-url", "https://llm.example.com/v1"});
  EXPECT_EQ(remote.code, 2);
  EXPECT_NE(remote.err.find("OPENAI_API_KEY"), std::string::npos) << remote.err;
  Outcome env = run({"llm", "ping", "--model", "openai/m", "--base-url", server.openai_url(),
                     "--api-key-env", "NOT_SET_ANYWHERE"});
  EXPECT_EQ(env.code, 2);
  EXPECT_NE(env.err.find("NOT_SET_ANYWHERE"), std::string::npos);
  EXPECT_EQ(server.hits(), 0);
  EXPECT_FALSE(fs::exists(dir_ / "data"));
}

TEST_F(LlmCli, PingWithAnUnknownModelFailsBeforeAnyWork) {
  Outcome r = run({"llm", "ping", "--model", "nonsense-model"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("openkernel models"), std::string::npos);
  Outcome none = run({"llm", "ping"});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("--model"), std::string::npos);
}

TEST_F(LlmCli, PingRoundTripOpenAICompatible) {
  FakeLlmServer server;
  Outcome r =
      run({"llm", "ping", "--model", "openai/my-local-model", "--base-url", server.openai_url()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("reply    pong"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tokens   12 in, 3 out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("time to first token"), std::string::npos);
  EXPECT_NE(r.out.find("cost     unknown"), std::string::npos);
  EXPECT_EQ(server.received()[0].body["model"], "my-local-model");
  EXPECT_EQ(recorded_calls(), 1);
}

TEST_F(LlmCli, PingStreamsJsonWithTheConfiguredKeyAndModel) {
  FakeLlmServer server;
  ASSERT_EQ(run({"config", "--model", "claude-haiku-4-5", "--base-url", server.anthropic_url(),
                 "--api-key", kKey})
                .code,
            0);
  Outcome r = run({"llm", "ping", "--stream", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["reply"], "pong");
  EXPECT_EQ(j["provider"], "anthropic");
  EXPECT_EQ(j["key_source"], "the config file");
  EXPECT_TRUE(j["ttft_ms"].is_number());
  EXPECT_DOUBLE_EQ(j["cost_usd"].get<double>(), (12 * 1.0 + 3 * 5.0) / 1e6);
  EXPECT_EQ(server.received()[0].headers.at("x-api-key"), kKey);
  EXPECT_EQ(server.received()[0].body["model"], "claude-haiku-4-5-20251001");
  EXPECT_EQ(r.out.find(kKey), std::string::npos);
}

TEST_F(LlmCli, PingStreamPrintsDeltas) {
  FakeLlmServer server;
  server.set_reply("streamed pong reply");
  Outcome r =
      run({"llm", "ping", "--model", "openai/m", "--base-url", server.openai_url(), "--stream"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("reply    streamed pong reply\n"), std::string::npos) << r.out;
}

TEST_F(LlmCli, RejectedKeyNeverReachesOutputOrStore) {
  FakeLlmServer server;
  server.script({Step{Behaviour::kEchoKey401}});
  ::setenv("OPENAI_API_KEY", kKey, 1);
  Outcome r = run({"llm", "ping", "--model", "openai/m", "--base-url", server.openai_url()});
  ::unsetenv("OPENAI_API_KEY");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("rejected the API key"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("$OPENAI_API_KEY"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(kKey), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find(kKey), std::string::npos);
  EXPECT_EQ(recorded_calls(), 1);
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "data")) {
    if (e.is_regular_file()) {
      EXPECT_EQ(slurp(e.path()).find(kKey), std::string::npos) << e.path();
    }
  }
}

TEST(LlmOptionsFlags, BudgetAndModelFlagsParse) {
  CLI::App app{"test"};
  LlmOptions o;
  add_llm_options(&app, o);
  app.parse("--model gpt-5 --budget-usd 0.5 --api-key-env MY_KEY", false);
  EXPECT_EQ(o.model, "gpt-5");
  EXPECT_EQ(o.api_key_env, "MY_KEY");
  EXPECT_EQ(budget_of(o), 0.5);
  EXPECT_EQ(budget_of(LlmOptions{}), std::nullopt);
  CLI::App bad{"test"};
  LlmOptions b;
  add_llm_options(&bad, b);
  EXPECT_THROW(bad.parse("--budget-usd -1", false), CLI::ValidationError);
}

TEST(LlmOptionsFlags, ConfigBaseUrlFollowsOnlyTheConfigModel) {
  auto registry = llm::Registry::load_default();
  ASSERT_TRUE(registry);
  config::Config cfg;
  cfg.model = "openai/local";
  cfg.base_url = "http://127.0.0.1:8000/v1";
  auto from_config = resolve_llm(LlmOptions{}, cfg, *registry);
  ASSERT_TRUE(from_config) << from_config.error().message;
  EXPECT_EQ(from_config->base_url, "http://127.0.0.1:8000/v1");
  LlmOptions other;
  other.model = "ollama/llama3";
  auto flagged = resolve_llm(other, cfg, *registry);
  ASSERT_TRUE(flagged) << flagged.error().message;
  EXPECT_EQ(flagged->base_url, "http://127.0.0.1:11434/v1");
}

}  // namespace
}  // namespace ok::cli
