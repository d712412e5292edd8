// The sweep's driver (src/sweep/driver.cpp) over a fake executor that runs nothing: it "finishes"
// tasks in the order they started by writing their report.json, so every scheduling rule is
// checked without processes, SLURM or sleeping. The last test runs the real local executor with a
// shell script standing in for `openkernel optimize`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "score/tsv.hpp"
#include "support/temp_dir.hpp"
#include "sweep/executor.hpp"
#include "sweep/sweep.hpp"
#include "util/paths.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using ok::sweep::Finished;
using ok::sweep::Progress;
using ok::sweep::Task;
using ok::sweep::TaskState;

namespace {

void write(const fs::path& p, const json& j) {
  ASSERT_TRUE(ok::util::write_file(p, j.dump()).has_value());
}

// Runs nothing. `wait` ends the oldest running task: done (a finished report with speedup 2 and
// wall 10 s), or failed for the numbers in `fail`; after cancel_all, interrupted (a report that
// says so). `on_finish` runs after each end (the tests set Ctrl-C there). With `gather_waits`, it
// stays busy for that many waits after its last task ended (as SLURM merging its stores).
class FakeExecutor final : public ok::sweep::Executor {
 public:
  explicit FakeExecutor(int slots) : slots_(slots) {}

  std::set<int> fail, refuse;  // problem numbers that fail when run / cannot start
  std::function<void()> on_finish;
  std::vector<int> started;  // problem numbers in the order they started
  std::vector<std::string> slots_used;
  std::vector<std::vector<std::string>> argvs;
  int max_running = 0, cancels = 0;
  int gather_waits = 0;  // waits it still needs once every task has ended (busy() till then)

  ok::util::Result<void> begin(const ok::sweep::Plan&, const ok::sweep::Notify& notify) override {
    notify("planned", nullptr, std::to_string(slots_) + " slots");
    return {};
  }
  fs::path store_of(const Task& t) const override { return t.dir / "no-store.db"; }
  bool can_start() const override {
    return cancels == 0 && static_cast<int>(running_.size()) < slots_;
  }
  ok::util::Result<ok::sweep::Started> start(Task& t,
                                             const std::vector<std::string>& argv) override {
    if (refuse.count(t.number)) return ok::util::fail(ok::util::ErrorKind::kInternal, "no fork");
    std::string slot = "s" + std::to_string(free_slot());
    started.push_back(t.number);
    slots_used.push_back(slot);
    argvs.push_back(argv);
    running_.push_back({&t, slot});
    max_running = std::max(max_running, static_cast<int>(running_.size()));
    return ok::sweep::Started{slot, true};
  }
  ok::util::Result<std::optional<Finished>> wait(const ok::sweep::Notify&) override {
    if (running_.empty()) {
      EXPECT_GT(gather_waits, 0) << "wait() with nothing in flight and not busy";
      --gather_waits;
      return std::nullopt;
    }
    auto [t, slot] = running_.front();
    running_.pop_front();
    Finished f{t, slot, false, "", 10.0};
    if (cancels > 0) {
      write(t->dir / "report.json", {{"status", "interrupted"}, {"attempts", 0}});
      f.interrupted = true;
      f.why = "optimize exited with code 130";
    } else if (fail.count(t->number)) {
      f.why = "boom";
    } else {
      write(t->dir / "report.json", {{"status", "finished"},
                                     {"verdict", "correct"},
                                     {"speedup", 2.0},
                                     {"runtime_us", 1.0},
                                     {"attempts", 1}});
    }
    if (on_finish) on_finish();
    return f;
  }
  std::string cancel_all() override {
    ++cancels;
    return "interrupted: fake";
  }
  int slots() const override { return slots_; }
  bool busy() const override { return gather_waits > 0; }

 private:
  int free_slot() const {
    for (int i = 0;; ++i)
      if (std::none_of(running_.begin(), running_.end(),
                       [&](const auto& r) { return r.second == "s" + std::to_string(i); }))
        return i;
  }
  int slots_;
  std::deque<std::pair<Task*, std::string>> running_;
};

class SweepDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_.path();
    o_.output = dir_ / "r.tsv";
    o_.db = dir_ / "db.sqlite";
    o_.binary = "/bin/openkernel";
    o_.backend = "cpu";
    o_.model = "builtin";
    fs::create_directories(ok::sweep::work_dir(o_.output));
  }
  // Tasks 1..n of level 1, with the session their folder records (as plan() reads them).
  std::vector<Task> tasks(int n) const {
    std::vector<Task> out;
    for (int i = 1; i <= n; ++i) {
      Task t;
      t.level = 1;
      t.number = i;
      t.name = "P" + std::to_string(i);
      t.dir = ok::sweep::work_dir(o_.output) / ("L1_00" + std::to_string(i) + "_" + t.name);
      auto s = ok::util::read_file(t.dir / "session");
      if (s) t.session = s->substr(0, s->find('\n'));
      out.push_back(std::move(t));
    }
    return out;
  }
  ok::util::Result<ok::sweep::Outcome> drive(FakeExecutor& ex, int n) {
    events_.clear();
    return ok::sweep::drive(o_, tasks(n), ex, &cancel_,
                            [this](const Progress& p) { events_.push_back(copy(p)); });
  }
  // Progress without its task pointer (the driver's tasks are gone after drive() returns).
  struct Event {
    std::string kind, slot, text;
    int problem = 0, done = 0, total = 0, running = 0, fast_1 = 0, scored = 0;
    double eta_s = -1, wall_s = 0;
  };
  static Event copy(const Progress& p) {
    return {p.kind,   p.slot,  p.text,    p.task ? p.task->number : 0,
            p.done,   p.total, p.running, p.fast_1,
            p.scored, p.eta_s, p.wall_s};
  }
  std::vector<std::string> kinds() const {
    std::vector<std::string> k;
    for (const auto& e : events_)
      k.push_back(e.kind + (e.problem ? std::to_string(e.problem) : ""));
    return k;
  }
  TaskState state(int number) const { return ok::sweep::task_state(tasks(number).back()); }

  ok::testing::TempDir temp_{"ok-driver"};
  fs::path dir_;
  ok::sweep::Options o_;
  std::atomic<bool> cancel_{false};
  std::vector<Event> events_;
};

}  // namespace

TEST_F(SweepDriver, StartsTasksInOrderAndNeverMoreThanTheSlots) {
  FakeExecutor ex(2);
  auto out = drive(ex, 5);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(ex.started, (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(ex.max_running, 2);
  // Both slots fill first; each end frees the slot the next task takes.
  EXPECT_EQ(ex.slots_used, (std::vector<std::string>{"s0", "s1", "s0", "s1", "s0"}));
  EXPECT_EQ(kinds(), (std::vector<std::string>{"planned", "started1", "started2", "finished1",
                                               "started3", "finished2", "started4", "finished3",
                                               "started5", "finished4", "finished5"}));
  EXPECT_EQ(events_[0].text, "5 problems, 0 done before, 2 slots");
  EXPECT_EQ(events_[1].slot, "s0");
  EXPECT_EQ(out->planned, 5);
  EXPECT_EQ(out->ran, 5);
  EXPECT_EQ(out->failed, 0);
  EXPECT_FALSE(out->interrupted);
  ASSERT_EQ(out->rows.size(), 5u);
  auto tsv = ok::score::read_tsv(o_.output);
  ASSERT_TRUE(tsv.has_value()) << tsv.error().message;
  EXPECT_EQ(tsv->size(), 5u);
  // Each new task got a session, recorded in its folder and passed to optimize.
  auto t = tasks(1).front();
  ASSERT_FALSE(t.session.empty());
  auto it = std::find(ex.argvs[0].begin(), ex.argvs[0].end(), "--session");
  ASSERT_NE(it, ex.argvs[0].end());
  EXPECT_EQ(*(it + 1), t.session);
  EXPECT_NE(std::find(ex.argvs[0].begin(), ex.argvs[0].end(), "--problem"), ex.argvs[0].end());
}

TEST_F(SweepDriver, AFailedTaskIsRecordedAndTheOthersRunOn) {
  FakeExecutor ex(1);
  ex.fail = {2};
  auto out = drive(ex, 3);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(ex.started, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(out->ran, 3);
  EXPECT_EQ(out->failed, 1);
  EXPECT_FALSE(out->interrupted);
  EXPECT_EQ(kinds(), (std::vector<std::string>{"planned", "started1", "finished1", "started2",
                                               "failed2", "started3", "finished3"}));
  EXPECT_EQ(events_[4].text, "boom");
  auto error = ok::util::read_file(tasks(2).back().dir / "error.json");
  ASSERT_TRUE(error.has_value());
  json e = json::parse(*error);
  EXPECT_EQ(e["message"], "boom");
  EXPECT_EQ(e["verdict"], "error");
  EXPECT_EQ(e["backend"], "cpu");
  ASSERT_EQ(out->rows.size(), 3u);
  EXPECT_EQ(out->rows[1].verdict, "error");
  EXPECT_TRUE(out->rows[2].correct);
}

TEST_F(SweepDriver, ATaskThatCannotStartFailsAloneWithoutTakingASlot) {
  FakeExecutor ex(1);
  ex.refuse = {1};
  auto out = drive(ex, 2);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(ex.started, (std::vector<int>{2}));
  EXPECT_EQ(kinds(), (std::vector<std::string>{"planned", "failed1", "started2", "finished2"}));
  EXPECT_EQ(events_[1].text, "no fork");
  EXPECT_EQ(events_[1].done, 1);
  EXPECT_EQ(out->failed, 1);
  EXPECT_EQ(out->ran, 1);                    // a task that never ran is failed, not ran
  EXPECT_EQ(state(1), TaskState::kStarted);  // error.json: a re-run retries it
}

TEST_F(SweepDriver, CtrlCKeepsDoneTasksAndLeavesTheRestResumable) {
  FakeExecutor ex(2);
  int ends = 0;
  ex.on_finish = [&] {
    if (++ends == 1) cancel_ = true;  // Ctrl-C once the first task is done
  };
  auto out = drive(ex, 4);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(ex.started, (std::vector<int>{1, 2}));  // nothing starts after Ctrl-C
  EXPECT_EQ(ex.cancels, 1);
  EXPECT_TRUE(out->interrupted);
  EXPECT_EQ(out->ran, 1);
  EXPECT_EQ(out->failed, 0);
  EXPECT_EQ(kinds(), (std::vector<std::string>{"planned", "started1", "started2", "finished1",
                                               "stopped", "stopped2"}));
  EXPECT_EQ(events_[4].text, "interrupted: fake");
  EXPECT_EQ(state(1), TaskState::kDone);
  EXPECT_EQ(state(2), TaskState::kStarted);  // its session recorded, no error.json
  EXPECT_FALSE(fs::exists(tasks(2).back().dir / "error.json"));
  EXPECT_EQ(state(3), TaskState::kNew);
  EXPECT_EQ(state(4), TaskState::kNew);
  ASSERT_EQ(out->rows.size(), 1u);
  EXPECT_EQ(out->rows[0].problem_id, 1);
  const std::string session2 = tasks(2).back().session;
  ASSERT_FALSE(session2.empty());

  // The same sweep again: the done task is skipped, the stopped one keeps its session.
  cancel_ = false;
  FakeExecutor again(2);
  auto out2 = drive(again, 4);
  ASSERT_TRUE(out2.has_value()) << out2.error().message;
  EXPECT_EQ(again.started, (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(events_[0].text, "4 problems, 1 done before, 2 slots");
  EXPECT_EQ(out2->skipped, 1);
  EXPECT_EQ(out2->ran, 3);
  EXPECT_FALSE(out2->interrupted);
  auto it = std::find(again.argvs[0].begin(), again.argvs[0].end(), "--session");
  ASSERT_NE(it, again.argvs[0].end());
  EXPECT_EQ(*(it + 1), session2);
  // The interrupted run's report was set aside before the task ran again.
  EXPECT_TRUE(fs::exists(tasks(2).back().dir / "report.prev.json"));
  EXPECT_EQ(out2->rows.size(), 4u);
}

TEST_F(SweepDriver, NothingLeftToRunStartsNothing) {
  FakeExecutor first(1);
  ASSERT_TRUE(drive(first, 2).has_value());
  FakeExecutor again(1);
  auto out = drive(again, 2);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_TRUE(again.started.empty());
  EXPECT_EQ(out->skipped, 2);
  EXPECT_EQ(out->ran, 0);
  EXPECT_EQ(kinds(), (std::vector<std::string>{"planned"}));
  EXPECT_EQ(events_[0].done, 2);
}

TEST_F(SweepDriver, ProgressCountsDoneRunningScoreAndEta) {
  FakeExecutor ex(2);
  ex.fail = {3};
  auto out = drive(ex, 4);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  ASSERT_EQ(kinds(),
            (std::vector<std::string>{"planned", "started1", "started2", "finished1", "started3",
                                      "finished2", "started4", "failed3", "finished4"}));
  for (const auto& e : events_) EXPECT_EQ(e.total, 4);
  auto at = [&](size_t i) { return events_[i]; };
  EXPECT_EQ(at(0).done, 0);
  EXPECT_EQ(at(0).running, 0);
  EXPECT_DOUBLE_EQ(at(0).eta_s, -1);  // nothing timed yet
  EXPECT_EQ(at(2).running, 2);
  // First end: 1 done, 1 running; ETA = 10 s mean x (2 not started + 1 running) / 2 slots.
  EXPECT_EQ(at(3).done, 1);
  EXPECT_EQ(at(3).running, 1);
  EXPECT_DOUBLE_EQ(at(3).wall_s, 10);
  EXPECT_DOUBLE_EQ(at(3).eta_s, 15);
  EXPECT_EQ(at(3).fast_1, 1);
  EXPECT_EQ(at(3).scored, 1);
  EXPECT_EQ(at(4).running, 2);
  // The failure counts as done, scored but not fast.
  EXPECT_EQ(at(7).done, 3);
  EXPECT_EQ(at(7).fast_1, 2);
  EXPECT_EQ(at(7).scored, 3);
  EXPECT_DOUBLE_EQ(at(7).eta_s, 10.0 * 1 / 2);
  EXPECT_EQ(at(8).done, 4);
  EXPECT_EQ(at(8).running, 0);
  EXPECT_DOUBLE_EQ(at(8).eta_s, 0);
  EXPECT_EQ(at(8).fast_1, 3);
}

TEST_F(SweepDriver, ABusyExecutorIsWaitedForAfterItsLastTaskEnded) {
  FakeExecutor ex(2);
  ex.gather_waits = 3;
  auto out = drive(ex, 2);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(ex.gather_waits, 0);
  EXPECT_EQ(out->ran, 2);
}

TEST_F(SweepDriver, ASecondSweepIntoTheSameOutputIsRefused) {
  FakeExecutor ex(1);
  ok::sweep::Options other = o_;
  other.model = "gpt-x";
  ASSERT_TRUE(drive(ex, 1).has_value());
  FakeExecutor again(1);
  auto out = ok::sweep::drive(other, tasks(1), again, nullptr, {});
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().kind, ok::util::ErrorKind::kUsage);
  EXPECT_NE(out.error().message.find("another --output"), std::string::npos);
}

// The real local executor: a shell script as optimize, two GPU slots.
TEST_F(SweepDriver, LocalSlotsEachSeeTheirOwnGpu) {
  fs::path script = dir_ / "optimize.sh";
  ASSERT_TRUE(ok::util::write_file(script, R"(#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = --out ] && out="$2"; shift; done
printf '{"status":"finished","verdict":"correct","attempts":1,"gpu":"%s"}' \
  "$CUDA_VISIBLE_DEVICES" > "$out/report.json"
)")
                  .has_value());
  fs::permissions(script, fs::perms::owner_all);
  o_.binary = script;
  o_.gpus = {"0", "1"};
  auto out = ok::sweep::run(o_, tasks(3), &cancel_, {});
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(out->ran, 3);
  EXPECT_EQ(out->failed, 0);
  std::set<std::string> gpus;
  for (const auto& t : tasks(3)) {
    auto r = ok::util::read_file(t.dir / "report.json");
    ASSERT_TRUE(r.has_value());
    gpus.insert(json::parse(*r)["gpu"].get<std::string>());
  }
  const std::set<std::string> slots = {"0", "1"};
  EXPECT_TRUE(gpus.count("0"));  // the first task took the first slot
  EXPECT_TRUE(std::includes(slots.begin(), slots.end(), gpus.begin(), gpus.end()));
}
