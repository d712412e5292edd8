// RunModel: what each engine event leaves in the snapshot, and model text from several threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "../support/temp_dir.hpp"
#include "fixture.hpp"
#include "optimize/agents.hpp"
#include "optimize/event_replay.hpp"
#include "tui/model.hpp"

namespace ok::tui {
namespace {

optimize::Standing standing(int recorded, double elapsed = 0) {
  optimize::Standing s;
  s.total = 10;
  s.recorded = recorded;
  s.elapsed_s = elapsed;
  s.cost_usd = 0.5;
  return s;
}

TEST(TuiModel, TheFixtureSessionReadsBack) {
  const Snapshot s = testing::session_snapshot();
  EXPECT_EQ(s.info.problem, "swish_chain");
  EXPECT_EQ(s.info.device, "NVIDIA H200");
  EXPECT_EQ(s.attempts.size(), 13u);
  EXPECT_EQ(s.best()->number, 12);
  EXPECT_EQ(s.in_flight(), (std::vector<int>{14, 15}));
  EXPECT_EQ(s.standing.recorded, 13);
  EXPECT_EQ(s.finished_this_run, 13);
  EXPECT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.decisions.size(), 2u);
  const AttemptView* a = s.attempt(7);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->flags, (std::vector<std::string>{"no_custom_kernel"}));
  EXPECT_EQ(a->intent, "use the library sigmoid");
  EXPECT_EQ(*a->eager_us, 48.0);
  EXPECT_EQ(*a->compile_us, 30.0);
  EXPECT_EQ(s.attempt(12)->bottleneck, "memory");
  EXPECT_EQ(s.attempt(99), nullptr);
}

TEST(TuiModel, AgentMessagesFollowTheirAttempt) {
  RunModel m;
  m.generating(standing(0), 1, "tile the rows");
  m.model_text(1, "first ");
  m.model_text(1, "try");
  m.model_retry(1, "HTTP 529");
  m.model_text(1, "second try");
  m.evaluating(standing(0), 1, "rows in tiles of 128");
  Snapshot s = m.snapshot();
  ASSERT_EQ(s.agents.size(), 1u);
  EXPECT_EQ(s.agents[0].text, "second try");
  EXPECT_EQ(s.agents[0].retries, 1);
  EXPECT_EQ(s.agents[0].retry_reason, "HTTP 529");
  EXPECT_EQ(s.agents[0].state, "evaluating");
  EXPECT_EQ(s.in_flight(), std::vector<int>{1});
  optimize::Attempt a;
  a.number = 1;
  a.verdict = "incorrect";
  a.diagnosis = {{"bottleneck", "correctness"},
                 {"evidence", {"verdict incorrect"}},
                 {"suggestions", {{{"action", "mask the tail"}}, "accumulate in fp32"}}};
  m.attempt_finished(standing(1), a);
  s = m.snapshot();
  EXPECT_EQ(s.agents[0].state, "done");
  EXPECT_EQ(s.agents[0].diagnosis, "correctness; verdict incorrect");
  EXPECT_EQ(s.agents[0].suggestions,
            (std::vector<std::string>{"mask the tail", "accumulate in fp32"}));
  EXPECT_EQ(s.attempts[0].intent, "tile the rows");  // no params.intent: the generating title
  EXPECT_TRUE(s.in_flight().empty());
}

TEST(TuiModel, TheCriticsDiagnosisArrivesAfterTheAttempt) {
  RunModel m;
  optimize::Attempt a;
  a.number = 2;
  a.verdict = "correct";
  a.speedup = 1.5;
  a.cost_usd = 0.01;
  m.attempt_finished(standing(1), a);
  EXPECT_TRUE(m.snapshot().agents[0].diagnosis.empty());
  const uint64_t v = m.version();
  a.diagnosis = {{"bottleneck", "memory"},
                 {"evidence", {"82% of the copy bandwidth"}},
                 {"suggestions", {"vectorise the loads"}}};
  a.cost_usd = 0.03;  // the critic's call added
  a.wall_s = 4;
  m.diagnosed(standing(1), a);
  const Snapshot s = m.snapshot();
  EXPECT_GT(m.version(), v);
  EXPECT_EQ(s.agents[0].diagnosis, "memory; 82% of the copy bandwidth");
  EXPECT_EQ(s.agents[0].suggestions, std::vector<std::string>{"vectorise the loads"});
  ASSERT_EQ(s.attempts.size(), 1u);
  EXPECT_EQ(s.attempts[0].bottleneck, "memory");
  EXPECT_EQ(s.attempts[0].cost_usd, 0.03);
  EXPECT_EQ(s.attempts[0].wall_s, 4);
  EXPECT_EQ(s.attempts[0].speedup, 1.5);  // the rest of the row stays
}

TEST(TuiModel, ControlStoppedAndANewStart) {
  RunModel m;
  m.control(standing(0), "paused");
  EXPECT_EQ(m.snapshot().control, "paused");
  m.generating(standing(0), 3, "x");
  m.stopped(standing(2, 40), "stopped");
  Snapshot s = m.snapshot();
  EXPECT_EQ(s.stopped, "stopped");
  EXPECT_EQ(s.elapsed_s, 40);  // a stopped session's clock stands still
  EXPECT_TRUE(s.in_flight().empty());
  const uint64_t v = m.version();
  m.started(standing(2), {.session = "a", .what = "resumed"});
  s = m.snapshot();
  EXPECT_GT(m.version(), v);
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(s.control, "running");
  EXPECT_EQ(s.finished_this_run, 0);
}

TEST(TuiModel, ARecordedAgainAttemptReplacesItsRow) {
  RunModel m;
  optimize::Attempt a;
  a.number = 4;
  a.verdict = "timeout";
  m.attempt_finished(standing(1), a);
  a.verdict = "correct";
  m.attempt_finished(standing(1), a);
  const Snapshot s = m.snapshot();
  ASSERT_EQ(s.attempts.size(), 1u);
  EXPECT_EQ(s.attempts[0].verdict, "correct");
}

TEST(TuiModel, LiveElapsedAdvancesBetweenEvents) {
  RunModel m;
  m.strategy(standing(0, 100), "s");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GT(m.snapshot().elapsed_s, 100.01);
}

TEST(TuiModel, ModelTextFromSeveralThreadsKeepsItsTailAndEveryByte) {
  RunModel m;
  std::vector<std::thread> threads;
  for (int n = 1; n <= 4; ++n)
    threads.emplace_back([&m, n] {
      for (int i = 0; i < 500; ++i) m.model_text(n, "0123456789");
    });
  for (int i = 0; i < 50; ++i) (void)m.snapshot();
  for (auto& t : threads) t.join();
  const Snapshot s = m.snapshot();
  ASSERT_EQ(s.agents.size(), 4u);
  for (const auto& a : s.agents) EXPECT_EQ(a.text.size(), 5000u);
  m.model_text(1, std::string(kMaxAgentText, 'x') + "é");
  const Snapshot after = m.snapshot();
  const auto one = std::find_if(after.agents.begin(), after.agents.end(),
                                [](const AgentMessage& x) { return x.number == 1; });
  ASSERT_NE(one, after.agents.end());
  const std::string t = one->text;
  EXPECT_LE(t.size(), kMaxAgentText);
  EXPECT_EQ(t.substr(t.size() - 2), "é");
}

// `kernel-code watch` feeds the store's events to a RunModel through replay_event: it shows what
// the live run showed, the critic's diagnosis aside (the events do not carry it).
TEST(TuiModel, WatchingTheStoredEventsShowsWhatTheLiveRunShowed) {
  ok::testing::TempDir dir("ok-tui-watch");
  const auto db = dir.path() / "db.sqlite";
  auto writer = optimize::StoreObserver::open(db, "s-1");
  ASSERT_TRUE(writer) << writer.error().message;
  RunModel live, watched;
  optimize::FanOut both({&live, writer->get()});
  testing::feed_session(both);
  ASSERT_FALSE((*writer)->error());
  optimize::EventFollower follower(db, "s-1");
  auto rows = follower.poll();
  ASSERT_TRUE(rows) << rows.error().message;
  for (const auto& e : *rows) EXPECT_TRUE(optimize::replay_event(e, watched)) << e.kind;

  Snapshot a = live.snapshot(), b = watched.snapshot();
  a.elapsed_s = b.elapsed_s = 754;
  for (auto& x : a.attempts) x.bottleneck.clear();
  for (auto& m : a.agents) {
    m.diagnosis.clear();
    m.suggestions.clear();
  }
  ASSERT_EQ(a.attempts.size(), b.attempts.size());
  for (size_t i = 0; i < a.attempts.size(); ++i) {
    EXPECT_EQ(a.attempts[i].flags, b.attempts[i].flags) << i;
    EXPECT_EQ(a.attempts[i].eager_us, b.attempts[i].eager_us) << i;
    EXPECT_EQ(a.attempts[i].compile_us, b.attempts[i].compile_us) << i;
    EXPECT_EQ(a.attempts[i].intent, b.attempts[i].intent) << i;
  }
  EXPECT_EQ(b.info.device, "NVIDIA H200");
  EXPECT_EQ(b.standing.recorded, 13);
  for (auto [w, h] : {std::pair{80, 24}, {120, 40}, {200, 60}}) {
    UiState ui;
    EXPECT_EQ(testing::render_text(a, ui, w, h), testing::render_text(b, ui, w, h)) << w;
    ui.selected = 7;
    ui.detail = true;
    EXPECT_EQ(testing::render_text(a, ui, w, h), testing::render_text(b, ui, w, h)) << w;
  }
}

}  // namespace
}  // namespace ok::tui
