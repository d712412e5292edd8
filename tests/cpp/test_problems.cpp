#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "problems/kernelbench.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using ok::problems::find_problem;
using ok::problems::kernelbench_dir;
using ok::problems::list_level;
using ok::util::ErrorKind;

namespace {

using ok::testing::ScopedEnv;

class ProblemsTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = temp_.path(); }
  // A fake KernelBench directory with a level1 folder holding `files`.
  std::string make_kb(const std::string& name, std::initializer_list<const char*> files = {}) {
    fs::path dir = root_ / name;
    fs::create_directories(dir / "level1");
    for (const char* f : files) std::ofstream(dir / "level1" / f) << "# problem\n";
    return dir.string();
  }

  ok::testing::TempDir temp_{"ok-problems"};
  fs::path root_;
};

}  // namespace

TEST_F(ProblemsTest, FlagWinsOverEnvironmentAndConfig) {
  auto flag = make_kb("flag"), env = make_kb("env"), cfg = make_kb("cfg");
  ScopedEnv e("OPENKERNEL_KERNELBENCH_DIR", env);
  auto d = kernelbench_dir(flag, cfg);
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(*d, fs::path(flag));
}

TEST_F(ProblemsTest, EnvironmentWinsOverConfig) {
  auto env = make_kb("env"), cfg = make_kb("cfg");
  ScopedEnv e("OPENKERNEL_KERNELBENCH_DIR", env);
  auto d = kernelbench_dir(std::nullopt, cfg);
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(*d, fs::path(env));
}

TEST_F(ProblemsTest, ConfigIsTheLastResort) {
  auto cfg = make_kb("cfg");
  ScopedEnv e("OPENKERNEL_KERNELBENCH_DIR", std::nullopt);
  auto d = kernelbench_dir(std::nullopt, cfg);
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(*d, fs::path(cfg));
}

TEST_F(ProblemsTest, EmptyEnvironmentVariableCountsAsUnset) {
  auto cfg = make_kb("cfg");
  ScopedEnv e("OPENKERNEL_KERNELBENCH_DIR", "");
  auto d = kernelbench_dir(std::nullopt, cfg);
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(*d, fs::path(cfg));
}

TEST_F(ProblemsTest, NoSourceIsAUsageErrorListingTheWays) {
  ScopedEnv e("OPENKERNEL_KERNELBENCH_DIR", std::nullopt);
  auto d = kernelbench_dir(std::nullopt, std::nullopt);
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().kind, ErrorKind::kUsage);
  for (const char* way : {"--kernelbench-dir", "OPENKERNEL_KERNELBENCH_DIR", "kernelbench_dir"})
    EXPECT_NE(d.error().message.find(way), std::string::npos) << d.error().message;
}

TEST_F(ProblemsTest, MissingDirectoryNamesItAndItsSource) {
  auto valid = make_kb("valid");
  std::string missing = (root_ / "missing").string();
  {
    ScopedEnv e("OPENKERNEL_KERNELBENCH_DIR", valid);
    auto d = kernelbench_dir(missing, std::nullopt);  // a bad flag does not fall back
    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error().kind, ErrorKind::kBadInput);
    EXPECT_NE(d.error().message.find(missing), std::string::npos) << d.error().message;
    EXPECT_NE(d.error().message.find("--kernelbench-dir"), std::string::npos);
    EXPECT_NE(d.error().message.find("does not exist"), std::string::npos);
  }
  {
    ScopedEnv e("OPENKERNEL_KERNELBENCH_DIR", missing);
    auto d = kernelbench_dir(std::nullopt, valid);
    ASSERT_FALSE(d.has_value());
    EXPECT_NE(d.error().message.find("from OPENKERNEL_KERNELBENCH_DIR"), std::string::npos)
        << d.error().message;
  }
  ScopedEnv e("OPENKERNEL_KERNELBENCH_DIR", std::nullopt);
  auto d = kernelbench_dir(std::nullopt, missing);
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().message.find("config file"), std::string::npos) << d.error().message;
}

TEST_F(ProblemsTest, DirectoryWithoutLevel1IsRejected) {
  fs::create_directories(root_ / "notkb" / "level2");
  ScopedEnv e("OPENKERNEL_KERNELBENCH_DIR", std::nullopt);
  auto d = kernelbench_dir((root_ / "notkb").string(), std::nullopt);
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(d.error().message.find("no level1"), std::string::npos) << d.error().message;
}

TEST_F(ProblemsTest, AFileIsNotADirectory) {
  std::ofstream(root_ / "file") << "x";
  auto d = kernelbench_dir((root_ / "file").string(), std::nullopt);
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().kind, ErrorKind::kBadInput);
}

TEST_F(ProblemsTest, ListLevelSortsNumericallyAndParsesNames) {
  auto kb = make_kb("kb", {"10_Ten.py", "2_Two_Words.py", "1_One.py", "100_Hundred.py"});
  auto all = list_level(kb, 1);
  ASSERT_TRUE(all.has_value()) << all.error().message;
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0].number, 1);
  EXPECT_EQ((*all)[0].name, "One");
  EXPECT_EQ((*all)[1].number, 2);
  EXPECT_EQ((*all)[1].name, "Two_Words");
  EXPECT_EQ((*all)[2].number, 10);
  EXPECT_EQ((*all)[3].number, 100);
  EXPECT_EQ((*all)[3].name, "Hundred");
  EXPECT_EQ((*all)[0].level, 1);
  EXPECT_EQ((*all)[0].path, fs::path(kb) / "level1" / "1_One.py");
}

TEST_F(ProblemsTest, ListLevelSkipsFilesThatAreNotProblems) {
  auto kb = make_kb("kb", {"3_Ok.py", "README.md", "4_Text.txt", "helper.py", "x_Bad.py",
                           "5a_Bad.py", "_Bad.py", "6_Ok.pyc"});
  auto all = list_level(kb, 1);
  ASSERT_TRUE(all.has_value()) << all.error().message;
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].number, 3);
}

TEST_F(ProblemsTest, ListLevelOfEmptyFolderIsEmpty) {
  auto kb = make_kb("kb");
  auto all = list_level(kb, 1);
  ASSERT_TRUE(all.has_value());
  EXPECT_TRUE(all->empty());
}

TEST_F(ProblemsTest, ListLevelMissingLevelNamesIt) {
  auto kb = make_kb("kb", {"1_One.py"});
  auto all = list_level(kb, 7);
  ASSERT_FALSE(all.has_value());
  EXPECT_EQ(all.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(all.error().message.find("level 7"), std::string::npos) << all.error().message;
  EXPECT_NE(all.error().message.find("level7"), std::string::npos) << all.error().message;
}

TEST_F(ProblemsTest, FindProblemByNumber) {
  auto kb = make_kb("kb", {"1_One.py", "19_ReLU.py"});
  auto p = find_problem(kb, 1, 19);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  EXPECT_EQ(p->name, "ReLU");
  EXPECT_EQ(p->number, 19);
}

TEST_F(ProblemsTest, FindProblemMissingNumberSaysWhatExists) {
  auto kb = make_kb("kb", {"1_One.py", "2_Two.py", "10_Ten.py"});
  auto p = find_problem(kb, 1, 99);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().kind, ErrorKind::kBadInput);
  EXPECT_EQ(p.error().message, "KernelBench level 1 has no problem 99 (3 problems, numbered 1-10)");
}

TEST_F(ProblemsTest, FindProblemInMissingLevelFails) {
  auto kb = make_kb("kb", {"1_One.py"});
  auto p = find_problem(kb, 3, 1);
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().message.find("level 3"), std::string::npos);
}

TEST_F(ProblemsTest, SelectProblemsKeepsTheOrderAndNamesEveryMissingNumber) {
  auto kb = make_kb("kb", {"1_One.py", "2_Two.py", "10_Ten.py"});
  auto all = ok::problems::select_problems(kb, 1, {});
  ASSERT_TRUE(all.has_value()) << all.error().message;
  EXPECT_EQ(all->size(), 3u);
  auto some = ok::problems::select_problems(kb, 1, {10, 1});
  ASSERT_TRUE(some.has_value());
  ASSERT_EQ(some->size(), 2u);
  EXPECT_EQ((*some)[0].name, "Ten");
  auto bad = ok::problems::select_problems(kb, 1, {2, 7, 99});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(bad.error().message.find("has no problem 7, 99"), std::string::npos)
      << bad.error().message;
  auto empty = ok::problems::select_problems(make_kb("kb2", {"notes.txt"}), 1, {});
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message.find("has no problems"), std::string::npos);
}

// The real KernelBench set, when it is there (../shared/kernelbench or
// $OPENKERNEL_KERNELBENCH_DIR).
TEST(KernelBench, RealLevel1HasOneHundredProblems) {
  fs::path dir;
  if (const char* env = std::getenv("OPENKERNEL_KERNELBENCH_DIR"); env && *env) {
    dir = env;
  } else {
    dir = fs::path(OPENKERNEL_TEST_SOURCE_ROOT) / ".." / "shared" / "kernelbench";
  }
  if (!fs::is_directory(dir / "level1"))
    GTEST_SKIP() << "no KernelBench directory at " << dir << "; set OPENKERNEL_KERNELBENCH_DIR";
  auto all = list_level(dir, 1);
  ASSERT_TRUE(all.has_value()) << all.error().message;
  EXPECT_EQ(all->size(), 100u);
  EXPECT_EQ(all->front().number, 1);
  EXPECT_EQ(all->back().number, 100);
  auto relu = find_problem(dir, 1, 19);
  ASSERT_TRUE(relu.has_value());
  EXPECT_EQ(relu->name, "ReLU");
}
