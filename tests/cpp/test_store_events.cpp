// The store's events log (append_event, events_since), its migration from version 5, its merge,
// and Store::transaction.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "store/migrations.hpp"
#include "store/store.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using ok::store::Database;
using ok::store::EventRow;
using ok::store::SessionRow;
using ok::store::Store;

namespace {

class StoreEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_.path();
    path_ = dir_ / "openkernel.db";
  }
  static Store open(const fs::path& p) {
    auto s = Store::open(p);
    EXPECT_TRUE(s.has_value()) << s.error().message;
    return std::move(*s);
  }
  static EventRow event(const std::string& session, const std::string& kind, int number,
                        const std::string& text) {
    EventRow e;
    e.session = session;
    e.kind = kind;
    e.number = number;
    e.total = 6;
    e.text = text;
    e.payload_json = R"({"cost_usd":0})";
    return e;
  }
  static int64_t count(Store& s, const std::string& sql) {
    auto st = s.db().prepare(sql);
    EXPECT_TRUE(st.has_value()) << sql;
    EXPECT_TRUE(st->step().value_or(false)) << sql;
    return st->col_int(0);
  }
  ok::testing::TempDir temp_{"ok-store-events"};
  fs::path dir_, path_;
};

}  // namespace

TEST_F(StoreEventsTest, EventsComeBackInOrderAfterTheGivenId) {
  auto s = open(path_);
  auto a = s.append_event(event("s-1", "started", 0, "relu on cpu with builtin"));
  auto other = s.append_event(event("s-2", "started", 0, "another session"));
  auto b = s.append_event(event("s-1", "generating", 1, "builtin"));
  ASSERT_TRUE(a && other && b);
  EXPECT_LT(*a, *b);

  auto all = s.events_since("s-1", 0);
  ASSERT_TRUE(all.has_value()) << all.error().message;
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, *a);
  EXPECT_EQ((*all)[0].kind, "started");
  EXPECT_EQ((*all)[0].text, "relu on cpu with builtin");
  EXPECT_EQ((*all)[0].total, 6);
  EXPECT_EQ((*all)[0].payload_json, R"({"cost_usd":0})");
  EXPECT_EQ((*all)[0].time.size(), std::string("2025-01-01T00:00:00.000Z").size());
  EXPECT_EQ((*all)[1].kind, "generating");
  EXPECT_EQ((*all)[1].number, 1);

  auto later = s.events_since("s-1", *a);
  ASSERT_TRUE(later.has_value());
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ((*later)[0].id, *b);
  auto limited = s.events_since("s-1", 0, 1);
  ASSERT_TRUE(limited.has_value());
  EXPECT_EQ(limited->size(), 1u);
  EXPECT_TRUE(s.events_since("s-1", *b).value().empty());
}

TEST_F(StoreEventsTest, ASecondConnectionFollowsTheEventsAsTheyAreWritten) {
  auto writer = open(path_);
  auto reader = open(path_);
  int64_t seen = 0;
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(writer.append_event(event("live", "attempt_finished", i, "")).has_value());
    auto fresh = reader.events_since("live", seen);
    ASSERT_TRUE(fresh.has_value()) << fresh.error().message;
    ASSERT_EQ(fresh->size(), 1u) << "event " << i;
    EXPECT_EQ((*fresh)[0].number, i);
    seen = fresh->back().id;
  }
}

TEST_F(StoreEventsTest, MigratesAVersion5DatabaseWithItsRows) {
  {
    auto db = Database::open(path_);
    ASSERT_TRUE(db.has_value());
    auto m = ok::store::migrations();
    ASSERT_GE(m.size(), 6u);
    std::string sql;
    for (size_t v = 0; v < 5; ++v) sql += std::string(m[v]);
    sql += "PRAGMA user_version = 5;";
    sql += "INSERT INTO search_state(scope, kind, json) VALUES ('global', 'strategies', '{}');";
    ASSERT_TRUE(db->exec(sql).has_value());
  }
  auto s = open(path_);
  EXPECT_EQ(count(s, "PRAGMA user_version"), static_cast<int64_t>(ok::store::migrations().size()));
  EXPECT_EQ(count(s, "SELECT COUNT(*) FROM search_state"), 1);
  EXPECT_EQ(count(s, "SELECT COUNT(*) FROM events"), 0);
  ASSERT_TRUE(s.append_event(event("s-1", "started", 0, "")).has_value());
}

TEST_F(StoreEventsTest, MergeCopiesASessionsEventsAndReplacesEarlierCopies) {
  const fs::path other = dir_ / "task.db";
  {
    auto t = open(other);
    SessionRow row;
    row.id = "w-1";
    row.reference = "/r.py";
    row.name = "relu";
    row.backend = "cpu";
    row.model = "builtin";
    row.mode = "fast";
    row.status = "finished";
    ASSERT_TRUE(t.insert_session(row).has_value());
    ASSERT_TRUE(t.append_event(event("w-1", "started", 0, "first")).has_value());
    ASSERT_TRUE(t.append_event(event("w-1", "stopped", 0, "iterations")).has_value());
    ASSERT_TRUE(t.append_event(event("unmerged", "started", 0, "no session row")).has_value());
  }
  auto main = open(path_);
  ASSERT_TRUE(main.append_event(event("mine", "started", 0, "")).has_value());
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(main.merge_sessions(other).has_value());
    auto events = main.events_since("w-1", 0);
    ASSERT_TRUE(events.has_value());
    ASSERT_EQ(events->size(), 2u) << "round " << round;
    EXPECT_EQ((*events)[0].text, "first");
    EXPECT_EQ((*events)[1].kind, "stopped");
  }
  EXPECT_EQ(count(main, "SELECT COUNT(*) FROM events WHERE session = 'unmerged'"), 0);
  EXPECT_EQ(count(main, "SELECT COUNT(*) FROM events WHERE session = 'mine'"), 1);
}

TEST_F(StoreEventsTest, TransactionCommitsOnSuccessAndRollsBackOnError) {
  auto s = open(path_);
  auto ok = s.transaction([&]() -> ok::util::Result<void> {
    return s.put_search_state("global", "strategies", R"({"a":1})");
  });
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
  auto failed = s.transaction([&]() -> ok::util::Result<void> {
    if (auto w = s.put_search_state("global", "strategies", R"({"a":2})"); !w) return w;
    return ok::util::fail(ok::util::ErrorKind::kInternal, "changed my mind");
  });
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().message, "changed my mind");
  EXPECT_EQ(s.search_state("global", "strategies").value().value_or(""), R"({"a":1})");
  // The connection is usable (no transaction left open) and a nested BEGIN is refused.
  auto nested =
      s.transaction([&]() { return s.transaction([] { return ok::util::Result<void>(); }); });
  EXPECT_FALSE(nested.has_value());
  EXPECT_TRUE(s.put_search_state("global", "strategies", "{}").has_value());
}

TEST_F(StoreEventsTest, LlmCallsAreInsertedWithNullsForEmptyFields) {
  auto s = open(path_);
  ok::store::LlmCallRow c;
  c.purpose = "generator";
  c.provider = "openai";
  c.model = "m";
  c.base_url = "http://x";
  c.request_json = "{}";
  c.status = "error";
  c.error_kind = "auth";
  c.error = "denied";
  c.http_status = 401;
  c.attempts = 1;
  c.latency_ms = 3;
  c.started_at = "2025-01-01T00:00:00.000Z";
  auto id = s.insert_llm_call(c);
  ASSERT_TRUE(id.has_value()) << id.error().message;
  EXPECT_GT(*id, 0);
  EXPECT_EQ(count(s,
                  "SELECT COUNT(*) FROM llm_calls WHERE session IS NULL AND response IS NULL "
                  "AND stop_reason IS NULL AND input_tokens IS NULL AND http_status = 401"),
            1);
}
