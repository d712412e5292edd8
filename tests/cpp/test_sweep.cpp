#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "score/tsv.hpp"
#include "sweep/sweep.hpp"
#include "util/paths.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using ok::sweep::parse_selection;
using ok::util::ErrorKind;

namespace {

class SweepFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "ok-sweep-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  ok::sweep::Task task(int level, int number, const std::string& name) {
    ok::sweep::Task t;
    t.level = level;
    t.number = number;
    t.name = name;
    t.dir = ok::sweep::work_dir(dir_ / "r.tsv") / (std::string("L") + std::to_string(level) + "_" +
                                                   (number < 10    ? "00"
                                                    : number < 100 ? "0"
                                                                   : "") +
                                                   std::to_string(number) + "_" + name);
    fs::create_directories(t.dir);
    return t;
  }
  static void write(const fs::path& p, const json& j) {
    ASSERT_TRUE(ok::util::write_file(p, j.dump()).has_value());
  }
  fs::path dir_;
};

}  // namespace

TEST(SweepSelection, ParsesNumbersAndRangesSortedWithoutRepeats) {
  auto v = parse_selection("35, 1-3,2,10-10");
  ASSERT_TRUE(v.has_value()) << v.error().message;
  EXPECT_EQ(*v, (std::vector<int>{1, 2, 3, 10, 35}));
}

TEST(SweepSelection, RejectsMalformedSelectionsAsUsageErrors) {
  for (const char* bad : {"", "  ", "5-3", "a", "1,,2", "1-", "-3", "0", "0-2", "1-2-3"}) {
    auto v = parse_selection(bad);
    ASSERT_FALSE(v.has_value()) << "'" << bad << "' was accepted";
    EXPECT_EQ(v.error().kind, ErrorKind::kUsage);
    EXPECT_NE(v.error().message.find("selection"), std::string::npos) << v.error().message;
  }
}

TEST(SweepPaths, WorkFolderSitsBesideTheTsv) {
  EXPECT_EQ(ok::sweep::work_dir("results/X.tsv"), fs::path("results/X"));
  EXPECT_EQ(ok::sweep::work_dir("results/X"), fs::path("results/X.d"));
}

TEST(SweepTsv, FormattedRowsReadBackThroughTheScoreParser) {
  ok::score::Row a;
  a.level = 1;
  a.problem_id = 19;
  a.name = "ReLU\twith tab";
  a.backend = "triton";
  a.model = "builtin";
  a.correct = true;
  a.runtime_us = 3034.125;
  a.eager_us = 3100;
  a.compile_us = 3050;
  a.speedup_eager = 3100 / 3034.125;
  a.speedup_compile = 3050 / 3034.125;
  a.attempts = 3;
  a.cost_usd = 0;
  a.verdict = "correct";
  a.flags = "graph_much_faster,excessive_speedup";
  a.runtime_stderr_us = 1.5;
  a.eager_stderr_us = 0.25;
  a.device = "NVIDIA H200";
  ok::score::Row b;
  b.level = 1;
  b.problem_id = 20;
  b.name = "Broken";
  b.backend = "triton";
  b.model = "builtin";
  b.verdict = "error";
  std::string text = ok::score::format_tsv({a, b});
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "level\tproblem_id\tname\tbackend\tmodel\tcorrect\truntime_us\teager_us\tcompile_us\t"
            "speedup_eager\tspeedup_compile\tattempts\tcost_usd\tverdict\tflags\t"
            "runtime_stderr_us\teager_stderr_us\tcompile_stderr_us\tdevice");
  auto rows = ok::score::parse_tsv(text, "t.tsv");
  ASSERT_TRUE(rows.has_value()) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].name, "ReLU with tab");
  EXPECT_NEAR(*(*rows)[0].runtime_us, 3034.125, 1e-2);
  EXPECT_NEAR(*(*rows)[0].speedup_eager, a.speedup_eager.value(), 1e-5);
  EXPECT_EQ((*rows)[0].attempts, 3);
  EXPECT_EQ((*rows)[0].flags, a.flags);
  EXPECT_EQ((*rows)[0].runtime_stderr_us, 1.5);
  EXPECT_EQ((*rows)[0].eager_stderr_us, 0.25);
  EXPECT_FALSE((*rows)[0].compile_stderr_us.has_value());
  EXPECT_EQ((*rows)[0].device, "NVIDIA H200");
  EXPECT_EQ((*rows)[1].device, "");
  EXPECT_FALSE((*rows)[1].correct);
  EXPECT_FALSE((*rows)[1].runtime_us.has_value());
  EXPECT_FALSE((*rows)[1].attempts.has_value());
}

TEST_F(SweepFiles, TaskRowsComeFromReportsAndErrorsAndTheTsvIsSorted) {
  auto relu = task(1, 19, "ReLU");
  write(relu.dir / "report.json", {{"status", "finished"},
                                   {"backend", "cuda"},
                                   {"model", "builtin"},
                                   {"verdict", "correct"},
                                   {"speedup", 2.0},
                                   {"speedup_compile", 1.5},
                                   {"runtime_us", 10.0},
                                   {"eager_runtime_us", 20.0},
                                   {"compile_runtime_us", 15.0},
                                   {"attempts", 4},
                                   {"cost_usd", 0.25},
                                   {"flags", {"graph_much_faster"}}});
  auto wrong = task(1, 3, "Matmul");
  write(wrong.dir / "report.json", {{"status", "finished"},
                                    {"backend", "cuda"},
                                    {"model", "builtin"},
                                    {"verdict", "incorrect"},
                                    {"speedup", nullptr},
                                    {"runtime_us", 5.0},
                                    {"eager_runtime_us", 8.0},
                                    {"attempts", 2},
                                    {"cost_usd", 0},
                                    {"flags", json::array()}});
  auto failed = task(1, 7, "Conv");
  write(failed.dir / "error.json",
        {{"verdict", "error"}, {"backend", "cuda"}, {"model", "builtin"}, {"message", "boom"}});
  task(1, 8, "NotStarted");  // a folder without a report or error has no row
  EXPECT_EQ(ok::sweep::task_state(relu), ok::sweep::TaskState::kDone);
  EXPECT_EQ(ok::sweep::task_state(failed), ok::sweep::TaskState::kStarted);

  auto rows = ok::sweep::write_results(dir_ / "r.tsv");
  ASSERT_TRUE(rows.has_value()) << rows.error().message;
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].problem_id, 3);
  EXPECT_EQ((*rows)[1].problem_id, 7);
  EXPECT_EQ((*rows)[2].problem_id, 19);
  const auto& m = (*rows)[0];
  EXPECT_FALSE(m.correct);
  EXPECT_FALSE(m.runtime_us.has_value());  // an incorrect kernel's time is not reported
  EXPECT_DOUBLE_EQ(*m.eager_us, 8.0);
  const auto& e = (*rows)[1];
  EXPECT_EQ(e.verdict, "error");
  EXPECT_EQ(e.backend, "cuda");
  const auto& r = (*rows)[2];
  EXPECT_TRUE(r.correct);
  EXPECT_DOUBLE_EQ(*r.speedup_eager, 2.0);
  EXPECT_DOUBLE_EQ(*r.compile_us, 15.0);
  EXPECT_EQ(r.flags, "graph_much_faster");
  auto back = ok::score::read_tsv(dir_ / "r.tsv");
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->size(), 3u);
}

TEST_F(SweepFiles, AnInterruptedReportIsNotDone) {
  auto t = task(2, 5, "Gemm");
  write(t.dir / "report.json",
        {{"status", "interrupted"}, {"verdict", "no_attempts"}, {"attempts", 0}});
  EXPECT_EQ(ok::sweep::task_state(t), ok::sweep::TaskState::kStarted);
  EXPECT_FALSE(ok::sweep::task_row(t).has_value());  // nothing known about it yet
  write(t.dir / "report.json", {{"status", "interrupted"},
                                {"verdict", "correct"},
                                {"attempts", 1},
                                {"speedup", 1.2},
                                {"runtime_us", 5.0}});
  auto row = ok::sweep::task_row(t);
  ASSERT_TRUE(row.has_value());  // the best so far of an interrupted session counts
  EXPECT_TRUE(row->correct);
}

// A level-1 task whose folder is /r/x/L1_<number>_<name>, its session `session`.
namespace {
ok::sweep::Task level1_task(int number, const std::string& name, const std::string& session) {
  ok::sweep::Task t;
  t.level = 1;
  t.number = number;
  t.name = name;
  t.dir = fmt::format("/r/x/L1_{:03}_{}", number, name);
  t.session = session;
  return t;
}
}  // namespace

TEST(SweepCommand, NewTasksNameTheProblemAndResumedOnesTheSession) {
  ok::sweep::Options o;
  o.binary = "/bin/openkernel";
  o.kernelbench_dir = "/kb";
  o.backend = "triton";
  o.model = "builtin";
  o.iterations = 3;
  o.seed = 7;
  const ok::sweep::Task t = level1_task(19, "ReLU", "w-1");
  auto fresh = ok::sweep::task_command(o, t, false, "/db");
  auto has = [](const std::vector<std::string>& a, const std::string& flag,
                const std::string& value) {
    auto it = std::find(a.begin(), a.end(), flag);
    return it != a.end() && it + 1 != a.end() && *(it + 1) == value;
  };
  EXPECT_EQ(fresh[0], "/bin/openkernel");
  EXPECT_EQ(fresh[1], "optimize");
  EXPECT_TRUE(has(fresh, "--session", "w-1"));
  EXPECT_TRUE(has(fresh, "--problem", "19"));
  EXPECT_TRUE(has(fresh, "--out", "/r/x/L1_019_ReLU"));
  EXPECT_TRUE(has(fresh, "--db", "/db"));
  EXPECT_TRUE(has(fresh, "--iterations", "3"));
  EXPECT_TRUE(has(fresh, "--seed", "1026"));  // 7 + 1 * 1000 + 19
  auto resumed = ok::sweep::task_command(o, t, true, "/db");
  EXPECT_TRUE(has(resumed, "--resume", "w-1"));
  EXPECT_TRUE(has(resumed, "--iterations", "3"));
  EXPECT_EQ(std::find(resumed.begin(), resumed.end(), "--problem"), resumed.end());
}

// --no-skills and --prompt-budget-tokens reach every new session (both executors run this command
// line), and only when asked; a resumed session keeps its own settings.
TEST(SweepCommand, SkillsAndPromptBudgetFlagsReachNewSessionsOnly) {
  ok::sweep::Options o;
  o.binary = "/bin/openkernel";
  o.backend = "cpu";
  o.model = "builtin";
  const ok::sweep::Task t = level1_task(2, "RowSum", "w-2");
  auto count = [](const std::vector<std::string>& a, const std::string& flag) {
    return std::count(a.begin(), a.end(), flag);
  };
  auto plain = ok::sweep::task_command(o, t, false, "/db");
  EXPECT_EQ(count(plain, "--no-skills"), 0);
  EXPECT_EQ(count(plain, "--prompt-budget-tokens"), 0);
  o.skills = false;
  o.prompt_budget_tokens = 4000;
  auto fresh = ok::sweep::task_command(o, t, false, "/db");
  EXPECT_EQ(count(fresh, "--no-skills"), 1);
  auto it = std::find(fresh.begin(), fresh.end(), "--prompt-budget-tokens");
  ASSERT_NE(it, fresh.end());
  ASSERT_NE(it + 1, fresh.end());
  EXPECT_EQ(*(it + 1), "4000");
  auto resumed = ok::sweep::task_command(o, t, true, "/db");
  EXPECT_EQ(count(resumed, "--no-skills"), 0);
  EXPECT_EQ(count(resumed, "--prompt-budget-tokens"), 0);
}

TEST_F(SweepFiles, TwoFoldersForOneProblemGiveOneRowTheNewest) {
  auto old_dir = task(1, 19, "ReLU");
  auto new_dir = task(1, 19, "ReLU_renamed");
  write(old_dir.dir / "report.json", {{"status", "finished"}, {"verdict", "incorrect"}});
  write(new_dir.dir / "report.json",
        {{"status", "finished"}, {"verdict", "correct"}, {"speedup", 1.5}, {"runtime_us", 2.0}});
  auto now = fs::file_time_type::clock::now();
  fs::last_write_time(old_dir.dir / "report.json", now - std::chrono::hours(1));
  fs::last_write_time(new_dir.dir / "report.json", now);
  auto rows = ok::sweep::write_results(dir_ / "r.tsv");
  ASSERT_TRUE(rows.has_value()) << rows.error().message;
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].name, "ReLU_renamed");
  EXPECT_TRUE((*rows)[0].correct);
  EXPECT_TRUE(ok::score::read_tsv(dir_ / "r.tsv").has_value());  // score accepts it
}
