// Recording of calls in the store's llm_calls table, with keys kept out of every file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fake_server.hpp"
#include "llm/client.hpp"
#include "store/migrations.hpp"
#include "store/store.hpp"

namespace ok::llm {
namespace {

namespace fs = std::filesystem;
using testing::Behaviour;
using testing::FakeLlmServer;
using testing::Step;

constexpr const char* kKey = "sk-ant-api03-RECORDERTESTKEY-0123456789";

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("ok_llm_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// True when any file under `dir` holds `needle`.
bool any_file_holds(const fs::path& dir, const std::string& needle) {
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && slurp(e.path()).find(needle) != std::string::npos) return true;
  return false;
}

TEST(LlmRecorder, MigrationAddsTheTable) {
  const auto dir = temp_dir("migrate");
  auto st = store::Store::open(dir / "db.sqlite");
  ASSERT_TRUE(st) << st.error().message;
  auto q = st->db().prepare("PRAGMA user_version");
  ASSERT_TRUE(q);
  ASSERT_TRUE(*q->step());
  EXPECT_EQ(q->col_int(0), static_cast<int64_t>(store::migrations().size()));
  EXPECT_GE(q->col_int(0), 2);
  auto cols = st->db().prepare("SELECT count(*) FROM pragma_table_info('llm_calls')");
  ASSERT_TRUE(cols);
  ASSERT_TRUE(*cols->step());
  EXPECT_EQ(cols->col_int(0), 25);
  fs::remove_all(dir);
}

TEST(LlmRecorder, EveryCallIsRecordedWithoutTheKey) {
  const auto dir = temp_dir("record");
  FakeLlmServer server;
  auto rec = StoreRecorder::open(dir / "db.sqlite", Redactor(kKey));
  ASSERT_TRUE(rec) << rec.error().message;

  Endpoint ep;
  ep.provider.api = Api::kAnthropic;
  ep.provider.name = "anthropic";
  ep.provider.key_env = "ANTHROPIC_API_KEY";
  ep.base_url = server.anthropic_url();
  ep.model_id = "claude-test";
  ep.api_key = kKey;
  ep.key_source = "$ANTHROPIC_API_KEY";
  ep.info = ModelInfo{};
  ep.info->price_in_per_mtok = 1;
  ep.info->price_out_per_mtok = 5;

  std::atomic<bool> cancel{false};
  Ledger ledger;
  ClientOptions o;
  o.retry.max_retries = 1;
  o.retry.base_delay = std::chrono::milliseconds(5);
  o.cancel = &cancel;
  o.ledger = &ledger;
  o.recorder = rec->get();
  Client client(ep, o);

  Request req;
  req.session = "s-1";
  req.purpose = "generator";
  req.system = "you write kernels";
  req.messages.push_back({Role::kUser, "write a relu kernel"});
  req.stream = true;
  ASSERT_TRUE(client.complete(req));

  // A key pasted into a prompt is redacted too.
  server.script({Step{Behaviour::kEchoKey401}});
  req.messages.push_back({Role::kUser, std::string("my key is ") + kKey});
  auto failed = client.complete(req);
  ASSERT_FALSE(failed);

  EXPECT_GT((*rec)->last_id(), 0);

  auto db = store::Database::open(dir / "db.sqlite");
  ASSERT_TRUE(db);
  auto q = db->prepare(
      "SELECT session, purpose, provider, model, base_url, stream, request, response, "
      "stop_reason, status, error_kind, error, http_status, attempts, input_tokens, output_tokens, "
      "usage_estimated, cost_usd, cost_estimated, latency_ms, ttft_ms, started_at "
      "FROM llm_calls ORDER BY id");
  ASSERT_TRUE(q);
  ASSERT_TRUE(*q->step());
  EXPECT_EQ(q->col_text(0), "s-1");
  EXPECT_EQ(q->col_text(1), "generator");
  EXPECT_EQ(q->col_text(2), "anthropic");
  EXPECT_EQ(q->col_text(3), "claude-test");
  EXPECT_EQ(q->col_text(4), server.anthropic_url());
  EXPECT_EQ(q->col_int(5), 1);
  const auto request = nlohmann::json::parse(q->col_text(6));
  EXPECT_EQ(request["system"], "you write kernels");
  EXPECT_EQ(request["messages"][0]["content"], "write a relu kernel");
  EXPECT_EQ(q->col_text(7), "pong");
  EXPECT_EQ(q->col_text(8), "end");
  EXPECT_EQ(q->col_text(9), "ok");
  EXPECT_TRUE(q->col_null(10));
  EXPECT_TRUE(q->col_null(12));
  EXPECT_EQ(q->col_int(13), 1);
  EXPECT_EQ(q->col_int(14), 12);
  EXPECT_EQ(q->col_int(15), 3);
  EXPECT_EQ(q->col_int(16), 0);
  EXPECT_DOUBLE_EQ(q->col_double(17), (12 * 1.0 + 3 * 5.0) / 1e6);
  EXPECT_EQ(q->col_int(18), 0);
  EXPECT_GT(q->col_double(19), 0);
  EXPECT_FALSE(q->col_null(20));
  EXPECT_EQ(q->col_text(21).size(), std::string("2025-01-01T00:00:00.000Z").size());

  ASSERT_TRUE(*q->step());
  EXPECT_EQ(q->col_text(9), "error");
  EXPECT_EQ(q->col_text(10), "auth");
  EXPECT_NE(q->col_text(11).find("[REDACTED]"), std::string::npos);
  EXPECT_EQ(q->col_int(12), 401);
  EXPECT_TRUE(q->col_null(7));
  EXPECT_TRUE(q->col_null(14));
  EXPECT_TRUE(q->col_null(17));
  EXPECT_NE(q->col_text(6).find("my key is [REDACTED]"), std::string::npos);
  EXPECT_FALSE(*q->step());

  EXPECT_EQ(ledger.totals().calls, 2);
  EXPECT_EQ(ledger.totals().failed_calls, 1);
  rec->reset();
  EXPECT_FALSE(any_file_holds(dir, kKey));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ok::llm
