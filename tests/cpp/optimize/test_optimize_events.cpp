// The persisted events back as Observer calls: StoreObserver writes every kind, EventFollower
// reads them from a second connection, replay_event gives the same calls with the same values;
// a store merge's re-appended copies are skipped and genuine repeats are not.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../support/temp_dir.hpp"
#include "optimize/agents.hpp"
#include "optimize/event_payload.hpp"
#include "optimize/event_replay.hpp"
#include "optimize/observer.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace ok::optimize;

namespace {

json standing_json(const Standing& s) {
  json j = payload::standing(s);
  j["total"] = s.total;
  return j;
}

// Every call as one JSON value holding all its arguments.
class Calls final : public Observer {
 public:
  std::vector<json> calls;
  void started(const Standing& s, const SessionInfo& i) override {
    add("started", {{"s", standing_json(s)}, {"info", payload::info(i)}});
  }
  void strategy(const Standing& s, const std::string& t) override {
    add("strategy", {{"s", standing_json(s)}, {"text", t}});
  }
  void generating(const Standing& s, int n, const std::string& t) override {
    add("generating", {{"s", standing_json(s)}, {"n", n}, {"text", t}});
  }
  void model_text(int n, std::string_view t) override {
    add("model_text", {{"n", n}, {"text", std::string(t)}});
  }
  void model_retry(int n, const std::string& t) override {
    add("model_retry", {{"n", n}, {"text", t}});
  }
  void evaluating(const Standing& s, int n, const std::string& t) override {
    add("evaluating", {{"s", standing_json(s)}, {"n", n}, {"text", t}});
  }
  void attempt_finished(const Standing& s, const Attempt& a) override {
    add("attempt_finished", {{"s", standing_json(s)}, {"attempt", payload::attempt(a)}});
  }
  void diagnosed(const Standing& s, const Attempt& a) override {
    add("diagnosed", {{"s", standing_json(s)}, {"n", a.number}, {"d", payload::diagnosis(a)}});
  }
  void search_decision(const Standing& s, int intent, const std::string& kind,
                       const std::string& t) override {
    add("search_decision", {{"s", standing_json(s)}, {"n", intent}, {"kind", kind}, {"text", t}});
  }
  void warning(const std::string& t) override { add("warning", {{"text", t}}); }
  void control(const Standing& s, const std::string& state) override {
    add("control", {{"s", standing_json(s)}, {"text", state}});
  }
  void stopped(const Standing& s, const std::string& reason) override {
    add("stopped", {{"s", standing_json(s)}, {"text", reason}});
  }

 private:
  void add(const char* kind, json args) {
    args["kind"] = kind;
    calls.push_back(std::move(args));
  }
};

Standing standing(int recorded) {
  Standing s;
  s.total = 8;
  s.best_speedup = recorded > 0 ? std::optional(1.25 * recorded) : std::nullopt;
  s.cost_usd = 0.125 * recorded;
  s.elapsed_s = 2.5 * recorded;
  s.recorded = recorded;
  return s;
}

// Every kind of event once (model_text twice), as a session would tell them.
void tell_everything(Observer& o) {
  o.started(standing(0), {.session = "s-1",
                          .problem = "relu",
                          .backend = "triton",
                          .model = "openai/m",
                          .device = "NVIDIA H200",
                          .what = "relu on triton with openai/m"});
  o.strategy(standing(0), "engine search, strategy seed-1 for pointwise problems, 2 in flight");
  o.generating(standing(0), 1, "fuse the tail");
  o.model_text(1, "Here is ");
  o.model_text(1, "a kernel\n```python\nx = 1\n```");
  o.model_retry(1, "HTTP 503");
  o.evaluating(standing(0), 1, "one fused loop");
  Attempt a;
  a.number = 1;
  a.generator = "openai/m";
  a.path = "/out/attempts/attempt_001.py";
  a.verdict = "correct";
  a.correct = true;
  a.speedup = 1.25;
  a.runtime_us = 12.5;
  a.cost_usd = 0.125;
  a.description = "one fused loop";
  a.wall_s = 3.5;
  a.evaluation_id = 42;
  a.params = {{"intent", {{"id", 3}, {"title", "fuse the tail"}}}};
  a.summary = {{"flags", {"cuda_graph", "rested"}},
               {"ref_runtime_us", 15.625},
               {"compile_runtime_us", 14.0}};
  o.attempt_finished(standing(1), a);
  Attempt failed;
  failed.number = 2;
  failed.verdict = "generation_failed";
  failed.error = "no code block";
  o.attempt_finished(standing(2), failed);
  a.diagnosis = {{"bottleneck", "memory"},
                 {"evidence", {"82% of the copy bandwidth"}},
                 {"suggestions", {{{"action", "vectorise the loads"}}}}};
  a.cost_usd = 0.25;
  a.wall_s = 5.5;
  o.diagnosed(standing(2), a);
  o.search_decision(standing(2), 3, "intent_succeeded", "fuse the tail: x1.25");
  o.search_decision(standing(2), -1, "replayed", "2 recorded attempts");
  o.warning("careful");
  o.control(standing(2), "paused");
  o.control(standing(2), "stopping");
  o.stopped(standing(2), "stopped");
}

std::vector<ok::store::EventRow> poll_all(EventFollower& f) {
  auto rows = f.poll();
  EXPECT_TRUE(rows) << rows.error().message;
  return rows ? *rows : std::vector<ok::store::EventRow>{};
}

}  // namespace

TEST(EventReplay, EveryKindComesBackAsTheSameCallWithTheSameValues) {
  ok::testing::TempDir dir("ok-replay");
  const fs::path db = dir.path() / "db.sqlite";
  auto writer = StoreObserver::open(db, "s-1");
  ASSERT_TRUE(writer) << writer.error().message;
  Calls direct;
  tell_everything(direct);
  tell_everything(**writer);
  ASSERT_FALSE((*writer)->error());

  EventFollower follower(db, "s-1");
  Calls replayed;
  for (const auto& e : poll_all(follower)) EXPECT_TRUE(replay_event(e, replayed)) << e.kind;
  ASSERT_EQ(replayed.calls.size(), direct.calls.size());
  for (size_t i = 0; i < direct.calls.size(); ++i)
    EXPECT_EQ(replayed.calls[i], direct.calls[i]) << i;
  EXPECT_TRUE(follower.finished());
  EXPECT_TRUE(poll_all(follower).empty());
}

TEST(EventReplay, UnknownKindsAreIgnoredAndOldPayloadsGiveDefaults) {
  Calls to;
  ok::store::EventRow e;
  e.kind = "a_newer_kind";
  EXPECT_FALSE(replay_event(e, to));
  EXPECT_TRUE(to.calls.empty());
  // An engine from before SessionInfo and the attempt's extra fields.
  e.kind = "started";
  e.total = 6;
  e.text = "relu on cpu with builtin";
  e.payload_json = R"({"best_speedup": null, "cost_usd": 0})";
  EXPECT_TRUE(replay_event(e, to));
  EXPECT_EQ(to.calls.back()["info"]["what"], "relu on cpu with builtin");
  EXPECT_EQ(to.calls.back()["s"]["total"], 6);
  e.kind = "attempt_finished";
  e.number = 3;
  e.text = "incorrect";
  e.payload_json = "not json";
  EXPECT_TRUE(replay_event(e, to));
  EXPECT_EQ(to.calls.back()["attempt"]["number"], 3);
  EXPECT_EQ(to.calls.back()["attempt"]["verdict"], "incorrect");
  EXPECT_TRUE(to.calls.back()["attempt"]["eager_us"].is_null());
}

TEST(EventFollower, FollowsWhileWrittenAndSaysWhenTheSessionStopped) {
  ok::testing::TempDir dir("ok-follow");
  const fs::path db = dir.path() / "db.sqlite";
  auto writer = StoreObserver::open(db, "s-2");
  ASSERT_TRUE(writer);
  EventFollower follower(db, "s-2");
  EXPECT_TRUE(poll_all(follower).empty());
  (*writer)->generating(standing(0), 1, "first");
  (*writer)->model_text(1, "x");
  auto first = poll_all(follower);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].kind, "generating");
  EXPECT_FALSE(follower.finished());
  (*writer)->stopped(standing(1), "iterations");
  EXPECT_EQ(poll_all(follower).size(), 1u);
  EXPECT_TRUE(follower.finished());
  // A resume starts the session again.
  (*writer)->started(standing(1), {.what = "relu on cpu with builtin"});
  EXPECT_EQ(poll_all(follower).size(), 1u);
  EXPECT_FALSE(follower.finished());
  // At most `limit` rows a poll.
  for (int i = 0; i < 5; ++i) (*writer)->model_text(2, "piece");
  auto rows = follower.poll(3);
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->size(), 3u);
  EXPECT_EQ(poll_all(follower).size(), 2u);
}

TEST(EventFollower, SkipsTheCopiesAStoreMergeReappendsButKeepsGenuineRepeats) {
  ok::testing::TempDir dir("ok-merge");
  const fs::path task = dir.path() / "task.sqlite", main = dir.path() / "main.sqlite";
  auto task_store = ok::store::Store::open(task);
  ASSERT_TRUE(task_store);
  ASSERT_TRUE(task_store->insert_session({.id = "s-3",
                                          .reference = "/r.py",
                                          .name = "relu",
                                          .backend = "cpu",
                                          .model = "builtin",
                                          .mode = "fast",
                                          .status = "running"}));
  // Two identical pieces of model text in the same millisecond: both are events.
  auto raw = [&](const char* kind, const char* time, const char* text) {
    auto st = task_store->db().prepare(
        "INSERT INTO events(session, time, kind, number, total, text, payload) "
        "VALUES ('s-3', ?1, ?2, 1, 0, ?3, '{}')");
    ASSERT_TRUE(st);
    st->bind(1, std::string(time)).bind(2, std::string(kind)).bind(3, std::string(text));
    ASSERT_TRUE(st->run());
  };
  raw("started", "2026-01-01T00:00:00.000Z", "relu on cpu with builtin");
  raw("model_text", "2026-01-01T00:00:01.000Z", "\n");
  raw("model_text", "2026-01-01T00:00:01.000Z", "\n");
  auto main_store = ok::store::Store::open(main);
  ASSERT_TRUE(main_store);
  ASSERT_TRUE(main_store->merge_sessions(task));
  EventFollower follower(main, "s-3");
  EXPECT_EQ(poll_all(follower).size(), 3u);
  // The task goes on; merged again, the session's events come back as copies under new ids.
  raw("model_text", "2026-01-01T00:00:02.000Z", "more");
  raw("stopped", "2026-01-01T00:00:03.000Z", "iterations");
  ASSERT_TRUE(main_store->merge_sessions(task));
  auto fresh = poll_all(follower);
  ASSERT_EQ(fresh.size(), 2u);
  EXPECT_EQ(fresh[0].text, "more");
  EXPECT_EQ(fresh[1].kind, "stopped");
  EXPECT_TRUE(follower.finished());
  EXPECT_TRUE(poll_all(follower).empty());
}
