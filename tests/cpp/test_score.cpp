#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "score/metrics.hpp"
#include "score/report.hpp"
#include "score/reward.hpp"
#include "score/tsv.hpp"

using ok::score::Baseline;
using ok::score::parse_tsv;
using ok::util::ErrorKind;

namespace {

const std::string kHeader =
    "level\tproblem_id\tname\tbackend\tmodel\tcorrect\truntime_us\teager_us\tcompile_us\t"
    "speedup_eager\tspeedup_compile\tattempts\tcost_usd\tverdict\tflags\n";

// level, problem, correct, speedup_eager, speedup_compile; the other columns are filler.
std::string row(int level, int problem, bool correct, const std::string& se,
                const std::string& sc) {
  return std::to_string(level) + "\t" + std::to_string(problem) + "\tP\tcuda\tm\t" +
         (correct ? "true" : "false") + "\t10\t20\t\t" + se + "\t" + sc + "\t3\t0.25\tv\t\n";
}

// Six problems, hand-scored below.
//   L1 P1 correct   eager 2.0   compile 1.0
//   L1 P2 correct   eager 0.5   compile 0.25
//   L1 P3 incorrect eager 3.0   compile -     (fast only if correct: never counts)
//   L1 P4 correct   eager -     compile -     (missing speedup: not fast, 1.0 in fallback)
//   L2 P1 correct   eager 1.25  compile 1.6
//   L2 P2 correct   eager 8.0   compile 4.0
const std::string kSix = kHeader + row(1, 1, true, "2.0", "1.0") + row(1, 2, true, "0.5", "0.25") +
                         row(1, 3, false, "3.0", "") + row(1, 4, true, "", "") +
                         row(2, 1, true, "1.25", "1.6") + row(2, 2, true, "8.0", "4.0");

std::vector<ok::score::Row> rows_of(const std::string& text) {
  auto r = parse_tsv(text, "t.tsv");
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? *r : std::vector<ok::score::Row>{};
}

ok::util::Error error_of(const std::string& text) {
  auto r = parse_tsv(text, "t.tsv");
  EXPECT_FALSE(r.has_value());
  return r ? ok::util::Error{} : r.error();
}

}  // namespace

TEST(ScoreTsv, ParsesFieldsAndEmptyNumbers) {
  auto rows = rows_of(kSix);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].line, 2);
  EXPECT_EQ(rows[0].level, 1);
  EXPECT_EQ(rows[0].problem_id, 1);
  EXPECT_TRUE(rows[0].correct);
  EXPECT_DOUBLE_EQ(*rows[0].speedup_eager, 2.0);
  EXPECT_FALSE(rows[0].compile_us.has_value());
  EXPECT_EQ(*rows[0].attempts, 3);
  EXPECT_DOUBLE_EQ(*rows[0].cost_usd, 0.25);
  EXPECT_FALSE(rows[2].correct);
  EXPECT_FALSE(rows[3].speedup_eager.has_value());
}

TEST(ScoreTsv, AcceptsCrlfReorderedAndExtraColumns) {
  std::string text =
      "extra\tflags\tverdict\tcost_usd\tattempts\tspeedup_compile\tspeedup_eager\tcompile_us\t"
      "eager_us\truntime_us\tcorrect\tmodel\tbackend\tname\tproblem_id\tlevel\r\n"
      "x\t\tok\t\t\t\t1.5\t\t\t\ttrue\tm\tcpu\tRelu\t19\t1\r\n";
  auto rows = rows_of(text);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].problem_id, 19);
  EXPECT_EQ(rows[0].name, "Relu");
  EXPECT_DOUBLE_EQ(*rows[0].speedup_eager, 1.5);
}

TEST(ScoreTsv, MalformedInputsNameTheLine) {
  struct Case {
    std::string text, needle;
  };
  const Case cases[] = {
      {"", "empty file"},
      {kHeader, "no result rows"},
      {"level\tproblem_id\tname\n1\t1\tx\n", "lacks column(s) backend, model, correct"},
      {kHeader + row(1, 1, true, "fast", ""),
       "t.tsv:2: column speedup_eager: 'fast' is not a number"},
      {kHeader + row(1, 1, true, "1.0", "") + row(1, 2, true, "0", ""),
       "t.tsv:3: column speedup_eager: speedup '0' must be greater than 0"},
      {kHeader + row(1, 1, true, "-2", ""), "'-2' is negative"},
      {kHeader + row(1, 1, true, "nan", ""), "'nan' is not a number"},
      {kHeader + "1\t1\tP\tcuda\tm\tyes\t\t\t\t\t\t\t\tv\t\n",
       "t.tsv:2: column correct: 'yes' is not a boolean"},
      {kHeader + "1\t1\tP\tcuda\tm\tTrue\t\t\t\t\t\t\t\tv\t\n", "'True' is not a boolean"},
      {kHeader + "x\t1\tP\tcuda\tm\ttrue\t\t\t\t\t\t\t\tv\t\n",
       "column level: 'x' is not an integer"},
      {kHeader + "1\t1\tP\tcuda\tm\ttrue\t\t\t\t\t\t2.5\t\tv\t\n",
       "column attempts: '2.5' is not an integer"},
      {kHeader + "1\t1\tP\tcuda\n", "t.tsv:2: 4 fields, the header has 15"},
      {"level\tlevel\n", "column 'level' appears twice"},
  };
  for (const auto& c : cases) {
    auto e = error_of(c.text);
    EXPECT_EQ(e.kind, ErrorKind::kBadInput) << c.needle;
    EXPECT_NE(e.message.find(c.needle), std::string::npos) << e.message << " / " << c.needle;
  }
}

TEST(ScoreTsv, DuplicatesAreNamed) {
  auto e = error_of(kHeader + row(1, 5, true, "1", "") + row(2, 5, true, "1", "") +
                    row(1, 5, false, "", "") + row(1, 6, true, "", "") + row(1, 6, true, "", ""));
  EXPECT_EQ(e.kind, ErrorKind::kBadInput);
  EXPECT_NE(e.message.find("level 1 problem 5 (lines 2, 4)"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("level 1 problem 6 (lines 5, 6)"), std::string::npos) << e.message;
  EXPECT_EQ(e.message.find("level 2"), std::string::npos) << e.message;
}

TEST(ScoreMetrics, HandComputed) {
  auto m = ok::score::compute(rows_of(kSix));
  EXPECT_EQ(m.n, 6);
  EXPECT_EQ(m.correct, 5);
  EXPECT_DOUBLE_EQ(m.correct_rate, 5.0 / 6);
  // eager, correct with a speedup: 2.0, 0.5, 1.25, 8.0 (over all 6 problems)
  //   > 0.0: 4   > 1.0: 2.0 1.25 8.0 = 3   > 1.2: 3   > 1.5: 2.0 8.0 = 2   > 2.0 (strict): 8.0 = 1
  ASSERT_TRUE(m.eager.fast_p);
  const double eager[] = {4.0 / 6, 3.0 / 6, 3.0 / 6, 2.0 / 6, 1.0 / 6};
  for (int i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ((*m.eager.fast_p)[i], eager[i]) << i;
  // geomean: (2 * 0.5 * 1.25 * 8)^(1/4) = 10^(1/4) = 1.77828; fallback 10^(1/6) = 1.46780
  EXPECT_NEAR(*m.eager.geomean_speedup, 1.7782794, 1e-6);
  EXPECT_NEAR(*m.eager.geomean_speedup_fallback, 1.4677993, 1e-6);
  // compile: 1.0, 0.25, 1.6, 4.0; 1.0 is not > 1.0
  //   > 0.0: 4   > 1.0: 1.6 4.0 = 2   > 1.2: 2   > 1.5: 2   > 2.0: 1
  const double compile[] = {4.0 / 6, 2.0 / 6, 2.0 / 6, 2.0 / 6, 1.0 / 6};
  for (int i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ((*m.compile.fast_p)[i], compile[i]) << i;
  // geomean: (1 * 0.25 * 1.6 * 4)^(1/4) = 1.6^(1/4) = 1.12468; fallback 1.6^(1/6) = 1.08148
  EXPECT_NEAR(*m.compile.geomean_speedup, 1.1246827, 1e-6);
  EXPECT_NEAR(*m.compile.geomean_speedup_fallback, 1.0814837, 1e-6);
}

TEST(ScoreMetrics, PerLevel) {
  auto levels = ok::score::by_level(rows_of(kSix));
  ASSERT_EQ(levels.size(), 2u);
  auto l1 = ok::score::compute(levels[1]);
  // level 1: n 4, correct 3; eager 2.0 0.5 -> fast_1 1/4, geomean 1.0, fallback (2*0.5)^(1/4) 1.0
  EXPECT_EQ(l1.n, 4);
  EXPECT_EQ(l1.correct, 3);
  EXPECT_DOUBLE_EQ((*l1.eager.fast_p)[1], 0.25);
  EXPECT_NEAR(*l1.eager.geomean_speedup, 1.0, 1e-12);
  // compile 1.0 0.25 -> fast_1 0, geomean 0.5, fallback 0.25^(1/4) = 0.70711
  EXPECT_DOUBLE_EQ((*l1.compile.fast_p)[1], 0.0);
  EXPECT_NEAR(*l1.compile.geomean_speedup, 0.5, 1e-12);
  EXPECT_NEAR(*l1.compile.geomean_speedup_fallback, std::sqrt(0.5), 1e-12);
  auto l2 = ok::score::compute(levels[2]);
  // level 2: eager sqrt(1.25 * 8) = sqrt(10), compile sqrt(1.6 * 4) = sqrt(6.4)
  EXPECT_DOUBLE_EQ((*l2.eager.fast_p)[1], 1.0);
  EXPECT_NEAR(*l2.eager.geomean_speedup, std::sqrt(10.0), 1e-12);
  EXPECT_NEAR(*l2.compile.geomean_speedup, std::sqrt(6.4), 1e-12);

  auto j = ok::score::score_json(rows_of(kSix));
  ASSERT_TRUE(j.contains("levels"));
  EXPECT_EQ(j["levels"]["1"]["n"], 4);
  EXPECT_EQ(j["levels"]["2"]["correct"], 2);
  auto single = ok::score::score_json(ok::score::by_level(rows_of(kSix))[2]);
  EXPECT_FALSE(single.contains("levels"));
}

TEST(ScoreMetrics, NoCorrectOrUnmeasuredBaseline) {
  // Nothing correct: geomean null, fallback 1.0, fast_p 0. No compile column filled: all null.
  auto m =
      ok::score::compute(rows_of(kHeader + row(1, 1, false, "2", "") + row(1, 2, false, "", "")));
  EXPECT_FALSE(m.eager.geomean_speedup);
  EXPECT_DOUBLE_EQ(*m.eager.geomean_speedup_fallback, 1.0);
  EXPECT_DOUBLE_EQ((*m.eager.fast_p)[0], 0.0);
  EXPECT_FALSE(m.compile.fast_p);
  EXPECT_FALSE(m.compile.geomean_speedup_fallback);
  auto j = ok::score::score_json(rows_of(kHeader + row(1, 1, false, "2", "")));
  EXPECT_TRUE(j["geomean_speedup"]["eager"].is_null());
  EXPECT_TRUE(j["fast_p"]["compile"].is_null());
}

TEST(ScoreMetrics, JsonKeys) {
  auto j = ok::score::score_json(rows_of(kSix));
  for (const char* k : {"n", "correct", "correct_rate", "fast_p", "geomean_speedup",
                        "geomean_speedup_fallback", "ci"})
    EXPECT_TRUE(j.contains(k)) << k;
  for (const char* b : {"eager", "compile"}) {
    for (const char* p : {"0.0", "1.0", "1.2", "1.5", "2.0"})
      EXPECT_TRUE(j["fast_p"][b].contains(p)) << b << p;
    EXPECT_TRUE(j["geomean_speedup"][b].is_number());
  }
  EXPECT_DOUBLE_EQ(j["fast_p"]["eager"]["1.0"].get<double>(), 0.5);
}

TEST(ScoreBootstrap, DeterministicAndAroundTheEstimate) {
  auto rows = rows_of(kSix);
  auto a = ok::score::bootstrap(rows);
  auto b = ok::score::bootstrap(rows);
  ASSERT_TRUE(a.eager.fast_1 && a.eager.geomean_speedup && a.eager.geomean_speedup_fallback);
  EXPECT_EQ(a.eager.fast_1->lo, b.eager.fast_1->lo);
  EXPECT_EQ(a.eager.geomean_speedup->hi, b.eager.geomean_speedup->hi);
  auto m = ok::score::compute(rows);
  EXPECT_LE(a.eager.fast_1->lo, 0.5);
  EXPECT_GE(a.eager.fast_1->hi, 0.5);
  EXPECT_LE(a.eager.geomean_speedup->lo, *m.eager.geomean_speedup);
  EXPECT_GE(a.eager.geomean_speedup->hi, *m.eager.geomean_speedup);
  EXPECT_GE(a.eager.fast_1->lo, 0.0);
  EXPECT_LE(a.eager.fast_1->hi, 1.0);
  // Every problem alike: the interval collapses onto the value.
  auto same =
      ok::score::bootstrap(rows_of(kHeader + row(1, 1, true, "2", "") + row(1, 2, true, "2", "")));
  EXPECT_NEAR(same.eager.geomean_speedup->lo, 2.0, 1e-12);
  EXPECT_NEAR(same.eager.geomean_speedup->hi, 2.0, 1e-12);
  EXPECT_FALSE(same.compile.fast_1);
}

TEST(ScoreCompare, MatchesLevelsAndMetrics) {
  auto published = ok::score::load_published(std::string(OPENKERNEL_TEST_SOURCE_ROOT) +
                                             "/data/baselines/published.json");
  ASSERT_TRUE(published) << published.error().message;
  for (const auto& f : *published) {
    EXPECT_FALSE(f.source.empty()) << f.system;
    EXPECT_FALSE(f.hardware.empty()) << f.system;
  }
  auto cs = ok::score::compare(rows_of(kSix), *published);
  bool saw_level1 = false, saw_mean = false, saw_level3 = false, saw_p101 = false;
  for (const auto& c : cs) {
    const auto& f = c.published;
    if (f.system.starts_with("KernelBench leaderboard") && f.level == 1) {
      saw_level1 = true;
      EXPECT_DOUBLE_EQ(*c.ours, 0.25);  // level 1 fast_1 eager, as in PerLevel
      EXPECT_EQ(c.our_n, 4);
    }
    if (f.system.starts_with("KernelBench leaderboard") && f.level == 3) {
      saw_level3 = true;
      EXPECT_FALSE(c.ours);
      EXPECT_EQ(c.our_n, 0);
    }
    if (f.metric == "mean_speedup") {
      saw_mean = true;
      EXPECT_FALSE(c.ours);
      EXPECT_FALSE(c.why_not.empty());
    }
    if (f.metric == "fast_p" && f.p == "1.01") {
      saw_p101 = true;
      EXPECT_DOUBLE_EQ(*c.ours, 3.0 / 6);  // 2.0, 1.25, 8.0 > 1.01
    }
  }
  EXPECT_TRUE(saw_level1 && saw_level3 && saw_mean && saw_p101);
  auto md = ok::score::compare_markdown(cs, "H200");
  EXPECT_NE(md.find("| metric | ours (H200) |"), std::string::npos);
  EXPECT_NE(md.find("NVIDIA L40S"), std::string::npos);
  EXPECT_NE(md.find("arXiv 2502.10517"), std::string::npos);
}

TEST(ScoreCompare, MalformedBaselines) {
  auto missing = ok::score::load_published("/nonexistent/published.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::kBadInput);
}

TEST(Reward, FixedDefinition) {
  using ok::score::reward;
  EXPECT_EQ(reward("rejected", 5.0), -1.0);  // a cheat is punished whatever it claims
  EXPECT_EQ(reward("incorrect", 3.0), 0.0);
  EXPECT_EQ(reward("compile_error", std::nullopt), 0.0);
  EXPECT_EQ(reward("", std::nullopt), 0.0);  // never evaluated
  EXPECT_DOUBLE_EQ(*reward("correct", 2.0), std::log(2.0));
  EXPECT_DOUBLE_EQ(*reward("correct", 1.0), 0.0);
  EXPECT_DOUBLE_EQ(*reward("correct", 0.1), -1.0);   // ln 0.1 = -2.30, clipped
  EXPECT_DOUBLE_EQ(*reward("correct", 100.0), 3.0);  // ln 100 = 4.61, clipped
  EXPECT_FALSE(reward("correct", std::nullopt));     // no baseline timed: no reward to give
  EXPECT_FALSE(reward("correct", 0.0));
  EXPECT_FALSE(reward("correct", std::nan("")));
}

// fast_p_significant, hand-scored: four problems with eager 100 us, stderr 1 us (1%).
//   P1 runtime 50 us +- 0.5: speedup 2.0, rel = hypot(0.01, 0.01) = 0.01414,
//      interval 2.0 * exp(+-1.96 * 0.01414) = [1.945, 2.057]: fast at 0.0, 1.0, 1.2, 1.5; not 2.0
//   P2 runtime 99.9 us +- 1: speedup 1.001, interval [0.973, 1.029]: includes 1.0, fast only at 0.0
//   P3 runtime 25 us +- 0.25: speedup 4.0 but flagged torch_ops_in_forward: never significant
//   P4 incorrect
TEST(ScoreSignificant, IntervalAndHonestyDecide) {
  std::string text =
      "level\tproblem_id\tname\tbackend\tmodel\tcorrect\truntime_us\teager_us\tcompile_us\t"
      "speedup_eager\tspeedup_compile\tattempts\tcost_usd\tverdict\tflags\truntime_stderr_us\t"
      "eager_stderr_us\tcompile_stderr_us\tdevice\n"
      "1\t1\tA\tcuda\tm\ttrue\t50\t100\t\t2\t\t1\t0\tcorrect\t\t0.5\t1\t\tH200\n"
      "1\t2\tB\tcuda\tm\ttrue\t99.9\t100\t\t1.001001\t\t1\t0\tcorrect\t\t1\t1\t\tH200\n"
      "1\t3\tC\tcuda\tm\ttrue\t25\t100\t\t4\t\t1\t0\tcorrect\tgraph_much_faster,"
      "torch_ops_in_forward\t0.25\t1\t\tH200\n"
      "1\t4\tD\tcuda\tm\tfalse\t\t100\t\t\t\t1\t0\tincorrect\t\t\t1\t\tH200\n";
  auto rows = parse_tsv(text, "sig.tsv");
  ASSERT_TRUE(rows) << rows.error().message;
  auto i1 = ok::score::speedup_interval((*rows)[0], Baseline::kEager);
  ASSERT_TRUE(i1);
  EXPECT_NEAR(i1->lo, 2.0 * std::exp(-1.959963984540054 * std::hypot(0.01, 0.01)), 1e-9);
  EXPECT_NEAR(i1->hi, 2.0 * std::exp(1.959963984540054 * std::hypot(0.01, 0.01)), 1e-9);
  auto m = ok::score::compute(*rows);
  ASSERT_TRUE(m.eager.fast_p_significant);
  const auto& sig = *m.eager.fast_p_significant;
  EXPECT_DOUBLE_EQ(sig[0], 2.0 / 4);  // P1, P2 (P3 flagged, P4 incorrect)
  EXPECT_DOUBLE_EQ(sig[1], 1.0 / 4);  // P1 only: P2's interval includes 1.0
  EXPECT_DOUBLE_EQ(sig[3], 1.0 / 4);
  EXPECT_DOUBLE_EQ(sig[4], 0.0);                    // 2.0 is inside P1's interval
  EXPECT_DOUBLE_EQ((*m.eager.fast_p)[1], 3.0 / 4);  // plain fast_1 counts P2 and P3
  EXPECT_FALSE(m.compile.fast_p_significant);       // never measured: null, not zero
  auto j = ok::score::score_json(*rows, {.resamples = 10});
  EXPECT_DOUBLE_EQ(j["fast_p_significant"]["eager"]["1.0"].get<double>(), 0.25);
  EXPECT_TRUE(j["fast_p_significant"]["compile"].is_null());
  EXPECT_NE(ok::score::score_text(*rows, {.resamples = 10}).find("fast_1.0 significant"),
            std::string::npos);
}

TEST(ScoreSignificant, OldFilesGiveNull) {
  auto rows = parse_tsv(kHeader + row(1, 1, true, "2.0", "1.5"), "old.tsv");
  ASSERT_TRUE(rows) << rows.error().message;
  auto j = ok::score::score_json(*rows, {.resamples = 10});
  EXPECT_TRUE(j["fast_p_significant"]["eager"].is_null());
  EXPECT_TRUE(j["fast_p_significant"]["compile"].is_null());
  EXPECT_EQ(ok::score::score_text(*rows, {.resamples = 10}).find("significant"), std::string::npos);
}
