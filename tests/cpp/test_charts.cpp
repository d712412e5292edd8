#include <gtest/gtest.h>

#include <algorithm>

#include "charts/data.hpp"
#include "charts/gnuplot.hpp"
#include "charts/inputs.hpp"
#include "score/metrics.hpp"
#include "store/store.hpp"
#include "support/temp_dir.hpp"
#include "util/paths.hpp"

using nlohmann::json;
using ok::charts::Attempt;
using ok::charts::Problem;

namespace {

Problem problem(int id, std::vector<Attempt> attempts, std::optional<double> compile_us = {}) {
  Problem p;
  p.row.level = 1;
  p.row.problem_id = id;
  p.row.name = "P" + std::to_string(id);
  p.row.backend = "triton";
  p.row.model = "builtin";
  p.row.compile_us = compile_us;
  p.device = "NVIDIA H200";
  p.attempts = std::move(attempts);
  return p;
}

Attempt attempt(int n, bool correct, std::optional<double> speedup, double runtime = 10) {
  return {.number = n,
          .verdict = correct ? "correct" : "incorrect",
          .correct = correct,
          .speedup = speedup,
          .runtime_us = runtime,
          .cost_usd = 0.5,
          .wall_s = 2};
}

const json& chart(const json& data, const std::string& id) {
  for (const auto& c : data["charts"])
    if (c["id"] == id) return c;
  static const json none;
  ADD_FAILURE() << "no chart " << id;
  return none;
}

}  // namespace

TEST(ChartsRowsAfter, KeepsTheBestCorrectSpeedupOfTheFirstKAttempts) {
  std::vector<Problem> ps = {
      problem(1, {attempt(1, false, 5.0), attempt(2, true, 0.8, 25), attempt(3, true, 1.6, 12.5)},
              20.0),
      // correct without a speedup is not a best (as the session's own choice)
      problem(2, {attempt(1, true, std::nullopt)}),
      problem(3, {})};  // no attempts recorded: left out
  auto k1 = ok::charts::rows_after(ps, 1);
  ASSERT_EQ(k1.size(), 2u);
  EXPECT_FALSE(k1[0].correct);
  EXPECT_EQ(k1[0].verdict, "incorrect");
  EXPECT_FALSE(k1[0].speedup_eager);
  auto k2 = ok::charts::rows_after(ps, 2);
  EXPECT_TRUE(k2[0].correct);
  EXPECT_DOUBLE_EQ(*k2[0].speedup_eager, 0.8);
  EXPECT_DOUBLE_EQ(*k2[0].speedup_compile, 20.0 / 25);
  auto k9 = ok::charts::rows_after(ps, 9);
  EXPECT_DOUBLE_EQ(*k9[0].speedup_eager, 1.6);
  EXPECT_DOUBLE_EQ(*k9[0].speedup_compile, 20.0 / 12.5);
  EXPECT_EQ(*k9[0].attempts, 3);
  EXPECT_FALSE(k9[1].correct);
  EXPECT_EQ(k9[1].verdict, "correct");  // the last attempt's verdict, yet no best
}

TEST(ChartsData, ScalingIsScoresFastPAtEachBudget) {
  ok::charts::Inputs in;
  in.runs.push_back({.label = "run", .source = "r.tsv"});
  in.runs[0].problems = {problem(1, {attempt(1, true, 0.5), attempt(2, true, 1.5)}),
                         problem(2, {attempt(1, true, 2.0)})};
  json data = ok::charts::chart_data(in);
  ASSERT_EQ(data["version"], 1);
  const json& s = chart(data, "scaling");
  ASSERT_EQ(s["series"].size(), 3u);  // fast_0.0, fast_1.0, fast_1.2
  const json& fast1 = s["series"][1];
  EXPECT_EQ(fast1["p"], "1.0");
  EXPECT_EQ(fast1["x"], json({1, 2}));
  for (int k = 1; k <= 2; ++k) {
    auto m = ok::score::compute(ok::charts::rows_after(in.runs[0].problems, k));
    EXPECT_DOUBLE_EQ(fast1["y"][k - 1].get<double>(), (*m.eager.fast_p)[1]);
  }
  EXPECT_DOUBLE_EQ(fast1["y"][0].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(fast1["y"][1].get<double>(), 1.0);
  // Spending: two attempts at 0.5 USD each after k=1 (one per problem), three after k=2.
  const json& cost = chart(data, "cost_frontier");
  EXPECT_EQ(cost["series"][0]["x"], json({1.0, 1.5}));
  EXPECT_EQ(cost["series"].back()["frontier"], true);
}

TEST(ChartsData, BoxStatsHeatmapAndHardware) {
  ok::charts::Inputs in;
  in.runs.push_back({.label = "a.tsv"});
  for (int i = 1; i <= 4; ++i) {
    Problem p = problem(5 - i, {});
    p.row.correct = i != 4;
    p.row.speedup_eager = static_cast<double>(i);
    p.row.verdict = p.row.correct ? "correct" : "rejected";
    in.runs[0].problems.push_back(p);
  }
  in.runs[0].problems[0].device = "";  // nothing recorded
  json data = ok::charts::chart_data(in);
  const json& box = chart(data, "speedup_distribution");
  ASSERT_EQ(box["series"].size(), 1u);  // no compile speedups
  EXPECT_EQ(box["series"][0]["values"], json({1.0, 2.0, 3.0}));
  EXPECT_DOUBLE_EQ(box["series"][0]["stats"]["q1"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(box["series"][0]["stats"]["median"].get<double>(), 2.0);
  const json& heat = chart(data, "problem_heatmap");
  EXPECT_EQ(heat["y"]["categories"][0], "L1   1 P1");  // sorted by level, problem
  EXPECT_TRUE(heat["z"][0][0].is_null());              // P1 rejected
  EXPECT_EQ(heat["text"][0][0], "rejected");
  EXPECT_DOUBLE_EQ(heat["z"][3][0].get<double>(), 1.0);
  const json& hw = chart(data, "hardware");
  EXPECT_EQ(hw["categories"], json({"NVIDIA H200", "unknown device"}));
  EXPECT_EQ(hw["series"][0]["n"], json({3, 1}));
}

TEST(ChartsData, PublishedBarsOnlyWhereARunMeasuresTheMetric) {
  ok::charts::Inputs in;
  in.runs.push_back({.label = "a.tsv"});
  Problem p = problem(1, {});
  p.row.correct = true;
  p.row.speedup_eager = 2.0;
  in.runs[0].problems.push_back(p);
  ok::score::PublishedFigure f{.system = "Sys", .hardware = "L40S", .levels = {1, 2}};
  f.metric = "fast_p";
  f.p = "1.0";
  f.baseline = "eager";
  f.value = 0.2;
  f.bound = "below";
  auto g = f;
  g.baseline = "compile";  // no compile speedups here: left out
  auto h = f;
  h.metric = "mean_speedup";  // not a metric score computes
  in.published = {f, g, h};
  json data = ok::charts::chart_data(in);
  const json& c = chart(data, "fast_p_vs_published");
  EXPECT_EQ(c["categories"], json({"fast_1.0 vs eager, levels 1,2"}));
  ASSERT_EQ(c["series"].size(), 2u);
  EXPECT_EQ(c["series"][0]["name"], "Sys");  // published first
  EXPECT_EQ(c["series"][0]["bounds"][0], "below");
  EXPECT_EQ(c["series"][1]["ours"], true);
  EXPECT_DOUBLE_EQ(c["series"][1]["values"][0].get<double>(), 1.0);
}

TEST(ChartsGnuplot, ScriptQuotesNamesAndWritesEveryFormat) {
  json c = {{"id", "x"},
            {"title", "a \"quoted\" \\ title"},
            {"kind", "lines"},
            {"x", {{"label", "k"}, {"scale", "linear"}}},
            {"y", {{"label", "fast_p"}, {"scale", "log"}}},
            {"series", {{{"name", "s_1"}, {"x", {1, 2}}, {"y", {0.5, nullptr}}}}}};
  auto s = ok::charts::gnuplot_script(c, "/d", "/o/x", {"png", "svg"});
  EXPECT_NE(s.find(R"(set title "a \"quoted\" \\ title")"), std::string::npos) << s;
  EXPECT_NE(s.find("set output \"/o/x.png\""), std::string::npos);
  EXPECT_NE(s.find("set output \"/o/x.svg\""), std::string::npos);
  EXPECT_NE(s.find("noenhanced"), std::string::npos);
  EXPECT_NE(s.find("set logscale y"), std::string::npos);
  EXPECT_NE(s.find("title \"s_1\""), std::string::npos);
}

TEST(ChartsGnuplot, UnknownFormatAndMissingProgramAreErrors) {
  auto bad = ok::charts::check_renderer({.formats = {"jpg"}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ok::util::ErrorKind::kUsage);
  auto missing =
      ok::charts::check_renderer({.formats = {"png"}, .gnuplot = "/nonexistent/gnuplot"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ok::util::ErrorKind::kEnvironment);
  EXPECT_NE(missing.error().message.find("gnuplot-nox"), std::string::npos);
}

TEST(ChartsInputs, StoreSessionsGiveTsvRowsTheirAttemptsAndTheRestARun) {
  ok::testing::TempDir tmp("charts");
  auto db = tmp.path() / "s.db";
  {
    auto st = ok::store::Store::open(db);
    ASSERT_TRUE(st);
    for (auto [id, number] : {std::pair{"sess-19", 19}, std::pair{"sess-other", 20}}) {
      ok::store::SessionRow s{.id = id, .reference = "/p.py", .name = "ReLU", .backend = "cpu"};
      s.model = "builtin";
      s.mode = "fast";
      s.status = "finished";
      s.options_json = json({{"level", 1}, {"number", number}}).dump();
      ASSERT_TRUE(st->insert_session(s));
      for (int n = 1; n <= 2; ++n) {
        ok::store::AttemptRow a{.session = id, .number = n, .generator = "builtin"};
        a.verdict = "correct";
        a.correct = true;
        a.speedup = n * 0.75;
        a.runtime_us = 10.0 / n;
        a.wall_s = 1;
        ASSERT_TRUE(st->insert_attempt(a));
      }
    }
  }
  auto tsv = tmp.path() / "r.tsv";
  ASSERT_TRUE(ok::util::write_file(
      tsv,
      "level\tproblem_id\tname\tbackend\tmodel\tcorrect\truntime_us\teager_us\tcompile_us\t"
      "speedup_eager\tspeedup_compile\tattempts\tcost_usd\tverdict\tflags\truntime_stderr_us\t"
      "eager_stderr_us\tcompile_stderr_us\tdevice\n"
      "1\t19\tReLU\tcpu\tbuiltin\ttrue\t5\t7.5\t\t1.5\t\t2\t0\tcorrect\t\t0.1\t0.1\t\tEPYC\n"));
  auto in = ok::charts::load_inputs({.tsvs = {tsv}, .dbs = {db}, .hardware = "fallback"});
  ASSERT_TRUE(in) << in.error().message;
  ASSERT_EQ(in->runs.size(), 2u);
  EXPECT_EQ(in->runs[0].label, "r.tsv");
  ASSERT_EQ(in->runs[0].problems.size(), 1u);
  EXPECT_EQ(in->runs[0].problems[0].device, "EPYC");  // the TSV's device column
  EXPECT_EQ(in->runs[0].problems[0].attempts.size(), 2u);
  EXPECT_EQ(in->runs[1].label, "s.db");  // the session no TSV row claims
  ASSERT_EQ(in->runs[1].problems.size(), 1u);
  const auto& other = in->runs[1].problems[0];
  EXPECT_EQ(other.row.problem_id, 20);
  EXPECT_TRUE(other.row.correct);
  EXPECT_DOUBLE_EQ(*other.row.speedup_eager, 1.5);
  EXPECT_EQ(other.device, "fallback");  // no evaluation recorded a device

  auto missing = ok::charts::load_inputs({.dbs = {tmp.path() / "none.db"}});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no such store"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "none.db"));
}
