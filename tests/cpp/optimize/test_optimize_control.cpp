// Steering a running session through optimize::Control: pause holds new generations back while
// the flights in hand finish, a stop lets every flight be evaluated and ends the session
// `stopped`, and the stopped session resumes. The loop runs for real against a fake evaluation
// worker (a Python script speaking the worker protocol that answers every evaluation `correct`
// after a short delay) and a generator that writes a fixed candidate.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "../support/fake_worker.hpp"
#include "../support/fixed_agents.hpp"
#include "../support/temp_dir.hpp"
#include "optimize/frontend.hpp"
#include "optimize/session.hpp"
#include "util/paths.hpp"
#include "util/subprocess.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace ok::optimize;
using ok::testing::FixedGenerator;
using ok::testing::NullCritic;
using namespace std::chrono_literals;

namespace {

// Answers hello, then every request after 0.15 s with a correct result whose hashes tell the
// candidates apart.
constexpr const char* kFakeWorker = R"py(
import json, sys, time, hashlib
print(json.dumps({"type": "hello", "ok": True, "protocol": 2, "versions": {"fake": 1}}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    time.sleep(0.15)
    cand = req.get("candidate", "")
    result = {"verdict": "correct", "correct": True, "valid": True, "compiled": True,
              "speedup": 1.5, "runtime_us": {"median": 10.0}, "ref_runtime_us": {"median": 15.0},
              "flags": ["fake"],
              "problem": {"source_hash": "ref-hash", "source": "reference"},
              "candidate": {"source_hash": hashlib.sha256(cand.encode()).hexdigest(),
                            "source": "candidate"}}
    print(json.dumps({"id": req["id"], "ok": True, "result": result}), flush=True)
)py";

// Records "kind number text" for each event, lets the test wait for one, and runs a hook (on the
// session's thread) when a generation is issued.
class Watcher final : public Observer {
 public:
  std::function<void(int number)> on_generating;

  void started(const Standing&, const SessionInfo& i) override { add("started", 0, i.what); }
  void strategy(const Standing&, const std::string&) override {}
  void generating(const Standing&, int n, const std::string&) override {
    add("generating", n, "");
    if (on_generating) on_generating(n);
  }
  void model_text(int, std::string_view) override {}
  void model_retry(int, const std::string&) override {}
  void evaluating(const Standing&, int n, const std::string&) override { add("evaluating", n, ""); }
  void attempt_finished(const Standing&, const Attempt& a) override {
    add("attempt_finished", a.number, a.verdict);
  }
  void diagnosed(const Standing&, const Attempt&) override {}
  void search_decision(const Standing&, int, const std::string&, const std::string&) override {}
  void warning(const std::string& text) override { add("warning", 0, text); }
  void control(const Standing&, const std::string& state) override { add("control", 0, state); }
  void stopped(const Standing&, const std::string& reason) override { add("stopped", 0, reason); }

  std::vector<std::string> seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }
  bool saw(const std::string& event) const {
    auto s = seen();
    return std::find(s.begin(), s.end(), event) != s.end();
  }
  bool wait_for(const std::string& event, std::chrono::milliseconds limit = 20s) const {
    std::unique_lock lock(mu_);
    return cv_.wait_for(
        lock, limit, [&] { return std::find(seen_.begin(), seen_.end(), event) != seen_.end(); });
  }

 private:
  void add(const char* kind, int n, const std::string& text) {
    std::lock_guard lock(mu_);
    seen_.push_back(std::string(kind) + " " + std::to_string(n) + (text.empty() ? "" : " " + text));
    cv_.notify_all();
  }
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<std::string> seen_;
};

// One session on a fresh store: `iterations` attempts at most, `in_flight` generations at once.
class Session {
 public:
  Session(int iterations, int in_flight) : dir_("ok-control") {
    (void)ok::util::write_file(dir_.path() / "worker.py", kFakeWorker);
    (void)ok::util::write_file(dir_.path() / "reference.py", "# reference\n");
    auto st = ok::store::Store::open(dir_.path() / "db.sqlite");
    EXPECT_TRUE(st) << st.error().message;
    store_.emplace(std::move(*st));
    options_.reference = (dir_.path() / "reference.py").string();
    options_.name = "relu";
    options_.backend = "cpu";
    options_.model = "builtin";
    options_.iterations = iterations;
    options_.in_flight = in_flight;
    options_.search = "prior";
    options_.out_dir = dir_.path() / "out";
    EXPECT_TRUE(store_->insert_session(new_session_row(id_, options_)));
  }

  // Runs (or resumes) the session on a thread of its own.
  std::future<ok::util::Result<Outcome>> start(Control* control, Observer* observer,
                                               std::vector<Attempt> resumed = {}) {
    auto w = ok::testing::fake_worker(dir_.path() / "worker.py");
    EXPECT_TRUE(w) << w.error().message;
    worker_.emplace(std::move(*w));
    Dependencies deps;
    deps.worker = &*worker_;
    deps.store = &*store_;
    deps.generator = &generator_;
    deps.critic = &critic_;
    deps.cancel = &cancel_;
    deps.observer = observer;
    deps.control = control;
    ProblemContext problem;
    problem.name = options_.name;
    problem.backend = options_.backend;
    problem.device = json{{"name", "a test CPU"}};
    return std::async(std::launch::async, [this, deps, problem, resumed]() mutable {
      return run_session(id_, options_, problem, std::move(resumed), deps);
    });
  }

  ok::store::Store& store() { return *store_; }
  const std::string& id() const { return id_; }

 private:
  ok::testing::TempDir dir_;
  std::optional<ok::store::Store> store_;
  std::optional<ok::eval::Worker> worker_;
  Options options_;
  FixedGenerator generator_;
  NullCritic critic_;
  std::atomic<bool> cancel_{false};
  std::string id_ = "s-control";
};

Outcome finished(std::future<ok::util::Result<Outcome>>& f) {
  EXPECT_EQ(f.wait_for(60s), std::future_status::ready);
  auto r = f.get();
  EXPECT_TRUE(r) << r.error().message;
  return r ? *r : Outcome{};
}

}  // namespace

TEST(Control, PausedFromTheStartIssuesNothingUntilResumed) {
  Session session(2, 1);
  Control control;
  control.pause();
  Watcher events;
  auto run = session.start(&control, &events);
  ASSERT_TRUE(events.wait_for("control 0 paused"));
  std::this_thread::sleep_for(400ms);
  EXPECT_FALSE(events.saw("generating 1")) << testing::PrintToString(events.seen());
  control.resume();
  Outcome o = finished(run);
  EXPECT_EQ(o.stop_reason, "iterations");
  EXPECT_EQ(o.attempts.size(), 2u);
  EXPECT_TRUE(events.saw("control 0 running"));
}

TEST(Control, APauseLetsTheFlightInHandBeEvaluatedAndHoldsTheNext) {
  Session session(3, 1);
  Control control;
  Watcher events;
  events.on_generating = [&](int n) {
    if (n == 1) control.pause();
  };
  auto run = session.start(&control, &events);
  ASSERT_TRUE(events.wait_for("attempt_finished 1 correct"));
  std::this_thread::sleep_for(400ms);
  EXPECT_FALSE(events.saw("generating 2")) << testing::PrintToString(events.seen());
  EXPECT_TRUE(events.saw("control 0 paused"));
  control.resume();
  Outcome o = finished(run);
  EXPECT_EQ(o.stop_reason, "iterations");
  EXPECT_EQ(o.attempts.size(), 3u);
}

TEST(Control, AStopEvaluatesEveryFlightEndsStoppedAndTheSessionResumes) {
  Session session(4, 2);
  Control control;
  Watcher events;
  events.on_generating = [&](int n) {
    if (n == 2) control.request_stop();  // attempts 1 and 2 are in flight
  };
  auto run = session.start(&control, &events);
  Outcome o = finished(run);
  EXPECT_EQ(o.stop_reason, "stopped");
  EXPECT_EQ(o.status, "stopped");
  ASSERT_EQ(o.attempts.size(), 2u);
  for (const auto& a : o.attempts) {
    EXPECT_EQ(a.verdict, "correct");
    EXPECT_TRUE(a.evaluation_id.has_value());
  }
  EXPECT_FALSE(events.saw("generating 3"));
  EXPECT_TRUE(events.saw("control 0 stopping"));
  EXPECT_EQ(events.seen().back(), "stopped 0 stopped");
  auto row = session.store().find_session(session.id());
  ASSERT_TRUE(row && *row);
  EXPECT_EQ((*row)->status, "stopped");

  // `openkernel optimize --resume` takes it up where it stopped.
  auto resumed = resume_session(session.store(), session.id(), {});
  ASSERT_TRUE(resumed) << resumed.error().message;
  ASSERT_EQ(resumed->attempts.size(), 2u);
  Watcher more;
  auto again = session.start(nullptr, &more, resumed->attempts);
  Outcome o2 = finished(again);
  EXPECT_EQ(o2.stop_reason, "iterations");
  EXPECT_EQ(o2.status, "finished");
  ASSERT_EQ(o2.attempts.size(), 4u);
  EXPECT_EQ(o2.attempts.back().number, 4);
  EXPECT_TRUE(more.saw("generating 3"));
}

TEST(Control, StateSaysStoppingOverPaused) {
  Control c;
  EXPECT_EQ(c.state(), "running");
  c.pause();
  EXPECT_EQ(c.state(), "paused");
  c.request_stop();
  EXPECT_EQ(c.state(), "stopping");
  c.resume();
  EXPECT_EQ(c.state(), "stopping");
}
