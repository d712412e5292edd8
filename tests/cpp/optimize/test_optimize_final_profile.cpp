// The session's final deep profile of its best (loop_profile.cpp, docs/profiling.md "In
// optimize"): it adds to the best attempt's summary only its profile (the times' standard errors
// and the integrity flags the report and the sweep's TSV read stand), it reaches the evaluation
// row's result JSON, and it runs only after a search that ran its course with device time left
// (not after a worker error, nor past --budget-device-s or --budget-wall-s). The loop runs for real
// against a fake worker (a Python script speaking the worker protocol) that answers evaluations
// correct, fails the evaluation requests named in `fail_evaluations` and logs each profile
// request.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>
#include <optional>

#include "../support/fake_worker.hpp"
#include "../support/fixed_agents.hpp"
#include "../support/temp_dir.hpp"
#include "optimize/report.hpp"
#include "optimize/session.hpp"
#include "util/paths.hpp"

using nlohmann::json;
using namespace ok::optimize;
using ok::testing::FixedGenerator;
using ok::testing::NullCritic;

namespace {

constexpr const char* kFakeWorker = R"py(
import json, os, sys, time, hashlib
here = os.path.dirname(os.path.abspath(__file__))
fail = json.load(open(os.path.join(here, "fail.json")))
print(json.dumps({"type": "hello", "ok": True, "protocol": 2, "versions": {"fake": 1}}), flush=True)
evaluations = 0
for line in sys.stdin:
    req = json.loads(line)
    if req.get("op") == "profile":
        with open(os.path.join(here, "profiles.log"), "a") as log:
            log.write(req["candidate"] + "\n")
        profile = {"tier": "deep", "requested_tier": "deep", "cached": False,
                   "kernel_metrics": [{"name": "k", "achieved_occupancy_pct": 18.5}],
                   "flags": [{"flag": "recorded", "message": "a recorded page"}]}
        print(json.dumps({"id": req["id"], "ok": True, "result": {"profile": profile}}), flush=True)
        continue
    evaluations += 1
    time.sleep(0.05)
    if evaluations in fail:
        print(json.dumps({"id": req["id"], "ok": False,
                          "error": {"kind": "internal", "message": "the device was lost"}}),
              flush=True)
        continue
    cand = req.get("candidate", "")
    result = {"verdict": "correct", "correct": True, "valid": True, "compiled": True,
              "speedup": 1.5, "runtime_us": {"median": 10.0, "stderr": 0.25},
              "ref_runtime_us": {"median": 15.0, "stderr": 0.5},
              "flags": ["timer_resolution"],
              "roofline": {"fraction_of_speed_of_light": 0.1},
              "profile": {"tier": "basic", "kernel_table": [{"name": "k", "count": 1}],
                          "op_table": [], "torch_ops": []},
              "problem": {"source_hash": "ref-hash", "source": "reference"},
              "candidate": {"source_hash": hashlib.sha256(cand.encode()).hexdigest(),
                            "source": "candidate"}}
    print(json.dumps({"id": req["id"], "ok": True, "result": result}), flush=True)
)py";

// One session on a fresh store and a GPU backend (the fake worker stands in for the device).
struct ProfiledSession {
  ok::testing::TempDir dir{"ok-final-profile"};
  std::optional<ok::store::Store> store;
  std::optional<ok::eval::Worker> worker;
  Options options;
  std::string id = "s-final";

  explicit ProfiledSession(int iterations, const std::string& fail_evaluations = "[]") {
    (void)ok::util::write_file(dir.path() / "worker.py", kFakeWorker);
    (void)ok::util::write_file(dir.path() / "fail.json", fail_evaluations);
    (void)ok::util::write_file(dir.path() / "reference.py", "# reference\n");
    auto st = ok::store::Store::open(dir.path() / "db.sqlite");
    EXPECT_TRUE(st) << st.error().message;
    store.emplace(std::move(*st));
    options.reference = (dir.path() / "reference.py").string();
    options.name = "relu";
    options.backend = "cuda";
    options.model = "builtin";
    options.iterations = iterations;
    options.in_flight = 1;
    options.search = "prior";
    options.compile_baseline = false;
    options.skills = false;
    options.out_dir = dir.path() / "out";
  }

  Outcome go() {
    EXPECT_TRUE(store->insert_session(new_session_row(id, options)));
    auto w = ok::testing::fake_worker(dir.path() / "worker.py");
    EXPECT_TRUE(w) << w.error().message;
    worker.emplace(std::move(*w));
    FixedGenerator generator;
    NullCritic critic;
    std::atomic<bool> cancel{false};
    Dependencies deps;
    deps.worker = &*worker;
    deps.store = &*store;
    deps.generator = &generator;
    deps.critic = &critic;
    deps.cancel = &cancel;
    ProblemContext problem;
    problem.name = options.name;
    problem.backend = options.backend;
    problem.device = json{{"name", "a test GPU"}};
    auto o = run_session(id, options, problem, {}, deps);
    EXPECT_TRUE(o) << o.error().message;
    return o ? *o : Outcome{};
  }

  // The candidates the worker was asked to profile.
  int profiles() const {
    auto text = ok::util::read_file(dir.path() / "profiles.log");
    return text ? static_cast<int>(std::count(text->begin(), text->end(), '\n')) : 0;
  }

  json stored_result(int64_t evaluation_id) {
    auto text = store->evaluation_result(evaluation_id);
    EXPECT_TRUE(text && *text);
    return text && *text ? json::parse(**text) : json();
  }
};

}  // namespace

TEST(FinalProfile, AddsOnlyTheProfileToTheBestsSummaryAndReachesTheEvaluationRow) {
  ProfiledSession run(1);
  Outcome o = run.go();
  ASSERT_EQ(o.stop_reason, "iterations");
  ASSERT_TRUE(o.best);
  EXPECT_EQ(run.profiles(), 1);
  const Attempt& best = o.attempts[*o.best];
  ASSERT_TRUE(best.summary.is_object()) << best.summary.dump();
  EXPECT_EQ(best.summary["profile"].value("tier", ""), "deep") << best.summary.dump();
  // What the report and the sweep's TSV read from the summary stands.
  EXPECT_EQ(best.summary.value("runtime_stderr_us", 0.0), 0.25) << best.summary.dump();
  EXPECT_EQ(best.summary.value("ref_runtime_us", 0.0), 15.0);
  EXPECT_EQ(best.summary.value("ref_runtime_stderr_us", 0.0), 0.5);
  EXPECT_EQ(best.summary["flags"], json::array({"timer_resolution"}));
  json report = report_json(run.options, o);
  EXPECT_EQ(report["runtime_stderr_us"], 0.25);
  EXPECT_EQ(report["eager_runtime_stderr_us"], 0.5);
  EXPECT_EQ(report["flags"], json::array({"timer_resolution"}));
  EXPECT_EQ(report["fraction_of_speed_of_light"], 0.1);
  // The evaluation row holds the deep profile, the basic tier's tables kept.
  ASSERT_TRUE(best.evaluation_id);
  json stored = run.stored_result(*best.evaluation_id);
  EXPECT_EQ(stored["profile"].value("tier", ""), "deep") << stored.dump();
  EXPECT_EQ(stored["profile"]["kernel_table"], json::array({{{"name", "k"}, {"count", 1}}}));
  EXPECT_EQ(stored["profile"]["kernel_metrics"][0]["achieved_occupancy_pct"], 18.5);
  EXPECT_EQ(stored["runtime_us"]["stderr"], 0.25);  // the rest of the result untouched
}

TEST(FinalProfile, NotAfterAWorkerError) {
  ProfiledSession run(2,
                      "[2]");  // the second evaluation fails; no worker restart: the session stops
  Outcome o = run.go();
  EXPECT_EQ(o.stop_reason, "error");
  ASSERT_TRUE(o.best);  // the first attempt is a correct best without a deep profile
  EXPECT_EQ(run.profiles(), 0);
}

TEST(FinalProfile, NotPastTheDeviceBudget) {
  ProfiledSession run(3);
  run.options.budget_device_s = 0.01;  // spent by the first evaluation
  Outcome o = run.go();
  EXPECT_EQ(o.stop_reason, "device_time");
  ASSERT_TRUE(o.best);
  EXPECT_EQ(run.profiles(), 0);
}
