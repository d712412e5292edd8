// The engine's typed events: FanOut, StoreObserver (followed from a second connection while it
// writes), and the failure reasons the strategy population records.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "optimize/agents.hpp"
#include "optimize/loop.hpp"
#include "optimize/observer.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace ok::optimize;

namespace {

fs::path temp_db(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("ok_observer_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir / "db.sqlite";
}

// Remembers each event as "kind number text".
class Recorder final : public Observer {
 public:
  std::vector<std::string> seen;
  void started(const Standing&, const SessionInfo& info) override { add("started", 0, info.what); }
  void strategy(const Standing&, const std::string& text) override { add("strategy", 0, text); }
  void generating(const Standing&, int n, const std::string& what) override {
    add("generating", n, what);
  }
  void model_text(int n, std::string_view text) override {
    add("model_text", n, std::string(text));
  }
  void model_retry(int n, const std::string& why) override { add("model_retry", n, why); }
  void evaluating(const Standing&, int n, const std::string& what) override {
    add("evaluating", n, what);
  }
  void attempt_finished(const Standing&, const Attempt& a) override {
    add("attempt_finished", a.number, a.verdict);
  }
  void diagnosed(const Standing&, const Attempt& a) override {
    add("diagnosed", a.number, a.diagnosis.value("bottleneck", ""));
  }
  void search_decision(const Standing&, int intent, const std::string& kind,
                       const std::string& text) override {
    add("search_decision", intent, kind + ": " + text);
  }
  void warning(const std::string& text) override { add("warning", 0, text); }
  void control(const Standing&, const std::string& state) override { add("control", 0, state); }
  void stopped(const Standing&, const std::string& reason) override { add("stopped", 0, reason); }

 private:
  void add(const char* kind, int n, const std::string& text) {
    seen.push_back(std::string(kind) + " " + std::to_string(n) + " " + text);
  }
};

Standing standing() {
  Standing s;
  s.total = 6;
  s.best_speedup = 1.5;
  s.cost_usd = 0.25;
  s.elapsed_s = 12.5;
  s.recorded = 3;
  return s;
}

SessionInfo info(const std::string& what) {
  return {.session = "s-1",
          .problem = "relu",
          .backend = "cpu",
          .model = "m",
          .device = "cpu",
          .what = what};
}

}  // namespace

TEST(FanOut, HandsEveryEventToEachObserverInOrder) {
  Recorder a, b;
  FanOut both({&a, &b});
  Attempt at;
  at.number = 2;
  at.verdict = "correct";
  both.started(standing(), info("relu on cpu with builtin"));
  both.generating(standing(), 1, "builtin");
  both.model_text(1, "```python");
  both.attempt_finished(standing(), at);
  at.diagnosis = {{"bottleneck", "memory"}};
  both.diagnosed(standing(), at);
  both.search_decision(standing(), 3, "intent_added", "tile rows");
  both.stopped(standing(), "iterations");
  const std::vector<std::string> expected = {"started 0 relu on cpu with builtin",
                                             "generating 1 builtin",
                                             "model_text 1 ```python",
                                             "attempt_finished 2 correct",
                                             "diagnosed 2 memory",
                                             "search_decision 3 intent_added: tile rows",
                                             "stopped 0 iterations"};
  EXPECT_EQ(a.seen, expected);
  EXPECT_EQ(b.seen, expected);
}

TEST(StoreObserver, ASecondConnectionFollowsEveryEventWhileTheyAreWritten) {
  const fs::path db = temp_db("follow");
  auto events = StoreObserver::open(db, "s-1");
  ASSERT_TRUE(events) << events.error().message;
  auto follower = ok::store::Store::open(db);
  ASSERT_TRUE(follower) << follower.error().message;
  Observer& o = **events;
  int64_t last = 0;
  auto next = [&] {
    auto rows = follower->events_since("s-1", last);
    EXPECT_TRUE(rows.has_value());
    EXPECT_EQ(rows->size(), 1u);
    last = rows->back().id;
    return rows->back();
  };

  o.started(standing(), info("relu on cpu with m"));
  auto e = next();
  EXPECT_EQ(e.kind, "started");
  EXPECT_EQ(e.total, 6);
  EXPECT_EQ(e.text, "relu on cpu with m");
  EXPECT_EQ(json::parse(e.payload_json), json({{"best_speedup", 1.5},
                                               {"cost_usd", 0.25},
                                               {"elapsed_s", 12.5},
                                               {"recorded", 3},
                                               {"info",
                                                {{"session", "s-1"},
                                                 {"problem", "relu"},
                                                 {"backend", "cpu"},
                                                 {"model", "m"},
                                                 {"device", "cpu"},
                                                 {"what", "relu on cpu with m"}}}}));

  o.model_text(1, "Here is a kernel");
  e = next();
  EXPECT_EQ(e.kind, "model_text");
  EXPECT_EQ(e.number, 1);
  EXPECT_EQ(e.text, "Here is a kernel");

  Attempt a;
  a.number = 1;
  a.verdict = "mismatch";
  a.error = "max abs error 3";
  a.evaluation_id = 7;
  o.attempt_finished(standing(), a);
  e = next();
  EXPECT_EQ(e.kind, "attempt_finished");
  EXPECT_EQ(e.text, "mismatch");
  json p = json::parse(e.payload_json);
  EXPECT_EQ(p["attempt"]["error"], "max abs error 3");
  EXPECT_EQ(p["attempt"]["evaluation_id"], 7);
  EXPECT_TRUE(p["attempt"]["speedup"].is_null());

  a.diagnosis = {{"bottleneck", "correctness"}, {"evidence", {"max abs error 3"}}};
  a.cost_usd = 0.02;
  o.diagnosed(standing(), a);
  e = next();
  EXPECT_EQ(e.kind, "diagnosed");
  EXPECT_EQ(e.number, 1);
  EXPECT_EQ(e.text, "correctness");
  p = json::parse(e.payload_json);
  EXPECT_EQ(p["diagnosis"]["diagnosis"]["evidence"][0], "max abs error 3");
  EXPECT_EQ(p["diagnosis"]["cost_usd"], 0.02);

  o.search_decision(standing(), 4, "intent_failed", "tile rows: no gain");
  e = next();
  EXPECT_EQ(e.kind, "search_decision");
  EXPECT_EQ(e.number, 4);
  EXPECT_EQ(json::parse(e.payload_json)["decision"], "intent_failed");

  for (const char* kind :
       {"strategy", "generating", "model_retry", "evaluating", "warning", "control", "stopped"}) {
    const std::string k = kind;
    if (k == "strategy") o.strategy(standing(), "engine search");
    if (k == "generating") o.generating(standing(), 2, "an intent");
    if (k == "model_retry") o.model_retry(2, "HTTP 503");
    if (k == "evaluating") o.evaluating(standing(), 2, "fused");
    if (k == "warning") o.warning("careful");
    if (k == "control") o.control(standing(), "paused");
    if (k == "stopped") o.stopped(standing(), "iterations");
    EXPECT_EQ(next().kind, k);
  }
  EXPECT_FALSE((*events)->error());
  fs::remove_all(db.parent_path());
}

TEST(StoreObserver, ModelTextFromSeveralThreadsIsAllRecorded) {
  const fs::path db = temp_db("threads");
  auto events = StoreObserver::open(db, "s-2");
  ASSERT_TRUE(events) << events.error().message;
  std::vector<std::thread> threads;
  for (int t = 1; t <= 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) (*events)->model_text(t, "piece");
    });
  for (auto& t : threads) t.join();
  auto follower = ok::store::Store::open(db);
  ASSERT_TRUE(follower);
  auto rows = follower->events_since("s-2", 0);
  ASSERT_TRUE(rows.has_value());
  EXPECT_EQ(rows->size(), 100u);
  EXPECT_FALSE((*events)->error());
  fs::remove_all(db.parent_path());
}

TEST(FailureReasons, AreRecordedAsTheStrategyPopulationReadsThem) {
  ok::search::Intent i;
  EXPECT_FALSE(failure_of(i));  // open
  i.status = "succeeded";
  EXPECT_FALSE(failure_of(i));
  i.status = "failed";
  i.setback = ok::search::Setback::kNoGain;
  i.note = "no gain: x0.970 of the best";
  ASSERT_TRUE(failure_of(i));
  EXPECT_EQ(failure_of(i)->reason, FailureReason::kNoGain);
  EXPECT_EQ(failure_entry(*failure_of(i)), "no_gain");
  i.setback = ok::search::Setback::kIncorrect;
  i.note = "mismatch";
  EXPECT_EQ(failure_entry(*failure_of(i)), "mismatch");
  i.status = "pruned";
  i.setback = ok::search::Setback::kPruned;
  i.note = "pruned: BLOCK=64 gave mismatch";
  EXPECT_EQ(failure_entry(*failure_of(i)), "pruned: BLOCK=64 gave mismatch");
  EXPECT_EQ(failure_entry({FailureReason::kStagnation, ""}), "stagnation");
}
