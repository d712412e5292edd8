#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "store/migrations.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "support/temp_dir.hpp"
#include "util/paths.hpp"

namespace fs = std::filesystem;
using ok::store::Database;
using ok::store::EvaluationRow;
using ok::store::Store;
using ok::util::ErrorKind;

namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_.path();
    path_ = dir_ / "openkernel.db";
  }

  static int64_t scalar(Database& db, const std::string& sql) {
    auto st = db.prepare(sql);
    EXPECT_TRUE(st.has_value()) << sql;
    auto row = st->step();
    EXPECT_TRUE(row.has_value() && *row) << sql;
    return st->col_int(0);
  }
  static std::string text(Database& db, const std::string& sql) {
    auto st = db.prepare(sql);
    EXPECT_TRUE(st.has_value()) << sql;
    auto row = st->step();
    EXPECT_TRUE(row.has_value() && *row) << sql;
    return st->col_text(0);
  }
  static std::set<std::string> tables(Database& db) {
    std::set<std::string> out;
    auto st = db.prepare("SELECT name FROM sqlite_master WHERE type='table'");
    while (st && st->step().value_or(false)) out.insert(st->col_text(0));
    return out;
  }
  static int latest() { return static_cast<int>(ok::store::migrations().size()); }

  Store open() {
    auto s = Store::open(path_);
    EXPECT_TRUE(s.has_value()) << s.error().message;
    return std::move(*s);
  }

  static EvaluationRow evaluation(int64_t problem, int64_t candidate, const std::string& verdict) {
    EvaluationRow e;
    e.problem_id = problem;
    e.candidate_id = candidate;
    e.verdict = verdict;
    e.compiled = true;
    e.correct = verdict == "correct";
    e.valid = true;
    e.speedup = 1.5;
    e.runtime_median_us = 10.0;
    e.ref_runtime_median_us = 15.0;
    e.backend = "cpu";
    e.device = "cpu";
    e.flags_json = R"(["timer_mismatch"])";
    e.wall_s = 2.5;
    return e;
  }

  ok::testing::TempDir temp_{"ok-store"};
  fs::path dir_;
  fs::path path_;
};

}  // namespace

TEST_F(StoreTest, OpenCreatesFileAndFullSchema) {
  auto s = open();
  EXPECT_TRUE(fs::exists(path_));
  EXPECT_EQ(scalar(s.db(), "PRAGMA user_version"), latest());
  auto t = tables(s.db());
  for (const char* name : {"problems", "candidates", "evaluations", "llm_calls"})
    EXPECT_TRUE(t.count(name)) << name;
  EXPECT_EQ(s.count_evaluations().value_or(-1), 0);
  EXPECT_EQ(s.path(), path_);
}

TEST_F(StoreTest, OpenCreatesMissingParentDirectories) {
  path_ = dir_ / "a" / "b" / "store.db";
  auto s = open();
  EXPECT_TRUE(fs::exists(path_));
}

TEST_F(StoreTest, UsesWalJournalAndForeignKeys) {
  auto s = open();
  EXPECT_EQ(text(s.db(), "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(scalar(s.db(), "PRAGMA foreign_keys"), 1);
}

TEST_F(StoreTest, ReopeningIsIdempotentAndKeepsData) {
  {
    auto s = open();
    ASSERT_TRUE(s.upsert_candidate({"h1", "src", "/c.py"}).has_value());
  }
  {
    auto s = open();
    EXPECT_EQ(scalar(s.db(), "PRAGMA user_version"), latest());
    EXPECT_EQ(scalar(s.db(), "SELECT COUNT(*) FROM candidates"), 1);
  }
  auto s = open();
  EXPECT_EQ(scalar(s.db(), "PRAGMA user_version"), latest());
}

TEST_F(StoreTest, MigrateTwiceOnOneConnectionIsANoOp) {
  auto db = Database::open(path_);
  ASSERT_TRUE(db.has_value());
  EXPECT_EQ(ok::store::migrate(*db).value_or(-1), latest());
  EXPECT_EQ(ok::store::migrate(*db).value_or(-1), latest());
}

TEST_F(StoreTest, MigratesAnOlderDatabaseForward) {
  ASSERT_GE(latest(), 2);
  {
    auto db = Database::open(path_);
    ASSERT_TRUE(db.has_value());
    ASSERT_TRUE(
        db->exec(std::string(ok::store::migrations()[0]) + "PRAGMA user_version = 1;").has_value());
    ASSERT_FALSE(tables(*db).count("llm_calls"));
  }
  auto s = open();
  EXPECT_EQ(scalar(s.db(), "PRAGMA user_version"), latest());
  EXPECT_TRUE(tables(s.db()).count("llm_calls"));
}

TEST_F(StoreTest, FailedMigrationRollsBackAndReportsError) {
  {
    auto db = Database::open(path_);
    ASSERT_TRUE(db.has_value());
    // A stray table that migration 2 wants to create makes it fail after migration 1 ran: the
    // pending migrations are applied all or nothing.
    ASSERT_TRUE(db->exec("CREATE TABLE llm_calls (x INTEGER);").has_value());
  }
  auto s = Store::open(path_);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("llm_calls"), std::string::npos) << s.error().message;
  auto db = Database::open(path_);
  ASSERT_TRUE(db.has_value());
  EXPECT_EQ(scalar(*db, "PRAGMA user_version"), 0);
  EXPECT_FALSE(tables(*db).count("evaluations"));
}

TEST_F(StoreTest, RefusesANewerSchemaVersion) {
  {
    auto db = Database::open(path_);
    ASSERT_TRUE(db.has_value());
    ASSERT_TRUE(db->exec("PRAGMA user_version = 99;").has_value());
  }
  auto s = Store::open(path_);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(s.error().message.find("99"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("newer"), std::string::npos) << s.error().message;
  auto db = Database::open(path_);
  EXPECT_EQ(scalar(*db, "PRAGMA user_version"), 99);  // left untouched
}

TEST_F(StoreTest, RefusesAPathThatIsADirectory) {
  fs::create_directories(dir_ / "adir");
  auto s = Store::open(dir_ / "adir");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("adir"), std::string::npos) << s.error().message;
}

TEST_F(StoreTest, RefusesAFileThatIsNotADatabase) {
  {
    std::FILE* f = std::fopen(path_.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("this is not an SQLite database, just some text that is long enough\n", f);
    std::fclose(f);
  }
  auto s = Store::open(path_);
  EXPECT_FALSE(s.has_value());
}

TEST_F(StoreTest, UpsertProblemDeduplicatesByHash) {
  auto s = open();
  auto a = s.upsert_problem({"hash-a", "Relu", "/p/relu.py", 1, 19, "src a"});
  auto again =
      s.upsert_problem({"hash-a", "ReLU", "/other/relu.py", std::nullopt, std::nullopt, "src a"});
  auto b =
      s.upsert_problem({"hash-b", "Softmax", "/p/softmax.py", std::nullopt, std::nullopt, "src b"});
  ASSERT_TRUE(a && again && b);
  EXPECT_EQ(*a, *again);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(scalar(s.db(), "SELECT COUNT(*) FROM problems"), 2);
  EXPECT_EQ(text(s.db(), "SELECT name FROM problems WHERE source_hash='hash-a'"), "ReLU");
  EXPECT_EQ(scalar(s.db(), "SELECT level FROM problems WHERE source_hash='hash-a'"), 1);
  EXPECT_EQ(scalar(s.db(),
                   "SELECT problem_number IS NULL FROM problems WHERE "
                   "source_hash='hash-b'"),
            1);
}

TEST_F(StoreTest, UpsertCandidateDeduplicatesByHash) {
  auto s = open();
  auto a = s.upsert_candidate({"c1", "source one", "/x/a.py"});
  auto again = s.upsert_candidate({"c1", "source one", "/y/a.py"});
  auto b = s.upsert_candidate({"c2", "source two", "/x/b.py"});
  ASSERT_TRUE(a && again && b);
  EXPECT_EQ(*a, *again);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(scalar(s.db(), "SELECT COUNT(*) FROM candidates"), 2);
  EXPECT_EQ(text(s.db(), "SELECT path FROM candidates WHERE source_hash='c1'"), "/y/a.py");
}

TEST_F(StoreTest, InsertsAndCountsEvaluations) {
  auto s = open();
  auto p = s.upsert_problem({"ph", "P", "/p.py", std::nullopt, std::nullopt, "src"});
  auto c = s.upsert_candidate({"ch", "src", "/c.py"});
  ASSERT_TRUE(p && c);
  auto e1 = s.insert_evaluation(evaluation(*p, *c, "correct"));
  auto incorrect = evaluation(*p, *c, "incorrect");
  incorrect.speedup = std::nullopt;
  incorrect.session = "session-1";
  auto e2 = s.insert_evaluation(incorrect);
  ASSERT_TRUE(e1.has_value()) << e1.error().message;
  ASSERT_TRUE(e2.has_value()) << e2.error().message;
  EXPECT_NE(*e1, *e2);
  EXPECT_EQ(s.count_evaluations().value_or(-1), 2);
  auto st = s.db().prepare(
      "SELECT verdict, correct, speedup, flags, session, backend, wall_s FROM evaluations "
      "ORDER BY id");
  ASSERT_TRUE(st.has_value());
  ASSERT_TRUE(st->step().value_or(false));
  EXPECT_EQ(st->col_text(0), "correct");
  EXPECT_EQ(st->col_int(1), 1);
  EXPECT_DOUBLE_EQ(st->col_double(2), 1.5);
  EXPECT_EQ(st->col_text(3), R"(["timer_mismatch"])");
  EXPECT_TRUE(st->col_null(4));
  EXPECT_EQ(st->col_text(5), "cpu");
  EXPECT_DOUBLE_EQ(st->col_double(6), 2.5);
  ASSERT_TRUE(st->step().value_or(false));
  EXPECT_EQ(st->col_text(0), "incorrect");
  EXPECT_EQ(st->col_int(1), 0);
  EXPECT_TRUE(st->col_null(2));
  EXPECT_EQ(st->col_text(4), "session-1");
  EXPECT_FALSE(st->step().value_or(true));
}

// A session with two attempts (one evaluated) written into `s`, as optimize writes it.
void write_session(Store& s, const std::string& id, const std::string& problem_hash,
                   const std::string& cand_hash, const EvaluationRow& proto) {
  auto p = s.upsert_problem({problem_hash, "P", "/p.py", 1, 19, "src"});
  auto c = s.upsert_candidate({cand_hash, "src " + cand_hash, "/c.py"});
  ASSERT_TRUE(p && c);
  ok::store::SessionRow row;
  row.id = id;
  row.problem_id = *p;
  row.reference = "/p.py";
  row.name = "P";
  row.backend = "cpu";
  row.model = "builtin";
  row.mode = "fast";
  row.status = "finished";
  row.out_dir = "/out";
  ASSERT_TRUE(s.insert_session(row).has_value());
  EvaluationRow e = proto;
  e.problem_id = *p;
  e.candidate_id = *c;
  e.session = id;
  auto eid = s.insert_evaluation(e);
  ASSERT_TRUE(eid.has_value());
  ok::store::AttemptRow a;
  a.session = id;
  a.number = 1;
  a.generator = "builtin";
  a.candidate_id = *c;
  a.evaluation_id = *eid;
  a.verdict = "correct";
  a.correct = true;
  a.speedup = 1.5;
  ASSERT_TRUE(s.insert_attempt(a).has_value());
  a.number = 2;
  a.evaluation_id.reset();
  a.candidate_id.reset();
  a.verdict = "generation_failed";
  a.correct = false;
  ASSERT_TRUE(s.insert_attempt(a).has_value());
}

TEST_F(StoreTest, SessionsAreListedNewestFirstWithTheirFigures) {
  auto s = open();
  EXPECT_TRUE(s.sessions().value().empty());
  write_session(s, "older", "ph", "c1", evaluation(0, 0, "correct"));
  write_session(s, "newer", "ph", "c2", evaluation(0, 0, "correct"));
  // Both rows were written within a millisecond or so: the older one is moved back in time.
  ASSERT_TRUE(
      s.db().exec("UPDATE sessions SET created_at = '2026-01-01T00:00:00.000Z' WHERE "
                  "id = 'older'"));
  ok::store::SessionRow row = *s.find_session("newer").value();
  row.status = "stopped";
  row.best_attempt = 1;
  row.best_speedup = 1.5;
  row.cost_usd = 0.25;
  ASSERT_TRUE(s.update_session(row));
  auto all = s.sessions();
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), 2u);
  const auto& n = (*all)[0];
  EXPECT_EQ(n.id, "newer");
  EXPECT_EQ(n.problem, "P");
  EXPECT_EQ(n.backend, "cpu");
  EXPECT_EQ(n.model, "builtin");
  EXPECT_EQ(n.mode, "fast");
  EXPECT_EQ(n.status, "stopped");
  EXPECT_EQ(n.attempts, 2);
  EXPECT_EQ(n.best_speedup, 1.5);
  EXPECT_DOUBLE_EQ(n.cost_usd, 0.25);
  EXPECT_EQ(n.out_dir, "/out");
  EXPECT_EQ(n.started_at.size(), 24u) << n.started_at;  // 2026-01-01T00:00:00.000Z
  EXPECT_GE(n.updated_at, n.started_at);
  EXPECT_EQ((*all)[1].id, "older");
  EXPECT_EQ((*all)[1].started_at, "2026-01-01T00:00:00.000Z");
  EXPECT_FALSE((*all)[1].best_speedup.has_value());
  auto one = s.sessions(1);
  ASSERT_TRUE(one);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->front().id, "newer");
}

TEST_F(StoreTest, MergeSessionsCopiesSessionsWithTheirRowsAndIsRepeatable) {
  // The main store already has rows of its own (ids 1..), so copied ids must be remapped.
  auto main = open();
  write_session(main, "local", "ph", "c-local", evaluation(0, 0, "correct"));
  fs::path other = dir_ / "task.db";
  {
    auto t = Store::open(other);
    ASSERT_TRUE(t.has_value());
    write_session(*t, "w-1", "ph", "c-task", evaluation(0, 0, "correct"));  // same problem
  }
  for (int round = 0; round < 2; ++round) {  // a second merge replaces, never duplicates
    auto n = main.merge_sessions(other);
    ASSERT_TRUE(n.has_value()) << n.error().message;
    EXPECT_EQ(*n, 1);
    EXPECT_EQ(scalar(main.db(), "SELECT COUNT(*) FROM sessions"), 2);
    EXPECT_EQ(scalar(main.db(), "SELECT COUNT(*) FROM problems"), 1);
    EXPECT_EQ(scalar(main.db(), "SELECT COUNT(*) FROM candidates"), 2);
    EXPECT_EQ(scalar(main.db(), "SELECT COUNT(*) FROM evaluations"), 2);
    EXPECT_EQ(scalar(main.db(), "SELECT COUNT(*) FROM attempts WHERE session = 'w-1'"), 2);
    // The copied attempt points at the copied evaluation and candidate, by content.
    EXPECT_EQ(scalar(main.db(),
                     "SELECT COUNT(*) FROM attempts a JOIN evaluations e ON e.id = a.evaluation_id "
                     "JOIN candidates c ON c.id = a.candidate_id WHERE a.session = 'w-1' AND "
                     "e.session = 'w-1' AND c.source_hash = 'c-task'"),
              1);
    EXPECT_EQ(scalar(main.db(),
                     "SELECT COUNT(*) FROM sessions s JOIN problems p ON "
                     "p.id = s.problem_id WHERE s.id = 'w-1' AND p.source_hash = 'ph'"),
              1);
  }
  auto fk = main.db().prepare("PRAGMA foreign_key_check");
  ASSERT_TRUE(fk.has_value());
  EXPECT_FALSE(fk->step().value_or(true)) << "a copied row points nowhere";
}

TEST_F(StoreTest, SearchStateIsReplacedPerScopeAndKindAndMergedWithItsSession) {
  auto main = open();
  EXPECT_FALSE(main.search_state("s-1", "intents").value().has_value());
  ASSERT_TRUE(main.put_search_state("s-1", "intents", R"({"v":1})").has_value());
  ASSERT_TRUE(main.put_search_state("s-1", "intents", R"({"v":2})").has_value());
  ASSERT_TRUE(main.put_search_state("global", "strategies", R"({"p":1})").has_value());
  EXPECT_EQ(main.search_state("s-1", "intents").value(), std::optional<std::string>(R"({"v":2})"));
  EXPECT_EQ(scalar(main.db(), "SELECT COUNT(*) FROM search_state"), 2);
  // A merged session brings its tree; the other store's population stays there.
  fs::path other = dir_ / "task.db";
  {
    auto t = Store::open(other);
    ASSERT_TRUE(t.has_value());
    write_session(*t, "w-1", "ph", "c-task", evaluation(0, 0, "correct"));
    ASSERT_TRUE(t->put_search_state("w-1", "intents", R"({"w":1})").has_value());
    ASSERT_TRUE(t->put_search_state("global", "strategies", R"({"p":2})").has_value());
  }
  ASSERT_TRUE(main.merge_sessions(other).has_value());
  EXPECT_EQ(main.search_state("w-1", "intents").value(), std::optional<std::string>(R"({"w":1})"));
  EXPECT_EQ(main.search_state("global", "strategies").value(),
            std::optional<std::string>(R"({"p":1})"));
}

TEST_F(StoreTest, AnAttemptsDiagnosisArrivesAfterItWasRecorded) {
  auto main = open();
  write_session(main, "s-2", "ph", "c-1", evaluation(0, 0, "correct"));
  ASSERT_TRUE(
      main.update_attempt_diagnosis("s-2", 1, R"({"bottleneck":"memory"})", 0.25, 3.5).has_value());
  auto rows = main.attempts("s-2");
  ASSERT_TRUE(rows.has_value());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].diagnosis_json, R"({"bottleneck":"memory"})");
  EXPECT_DOUBLE_EQ((*rows)[0].cost_usd, 0.25);
  EXPECT_DOUBLE_EQ((*rows)[0].wall_s, 3.5);
  EXPECT_EQ((*rows)[1].diagnosis_json, "");  // the other attempt is untouched
}

TEST_F(StoreTest, MergeSessionsReportsAnUnreadableStore) {
  auto main = open();
  fs::path bad = dir_ / "bad.db";
  ASSERT_TRUE(ok::util::write_file(bad, "not a database at all, just text").has_value());
  auto n = main.merge_sessions(bad);
  EXPECT_FALSE(n.has_value());
  EXPECT_EQ(scalar(main.db(), "SELECT COUNT(*) FROM sessions"), 0);
}

TEST_F(StoreTest, BaselinesKeepTheNewestPerProblemDeviceAndBackend) {
  auto s = open();
  auto p = s.upsert_problem({"ph", "P", "/p.py", 1, 1, "src"});
  ASSERT_TRUE(p.has_value());
  ok::store::BaselineRow b;
  b.problem_id = *p;
  b.device = "NVIDIA H200";
  b.backend = "triton";
  b.method = "events";
  b.eager_us = 10;
  b.compile_reason = "failed";
  ASSERT_TRUE(s.insert_baseline(b).has_value());
  b.eager_us = 9;
  b.compile_us = 7;
  b.compile_reason.clear();
  ASSERT_TRUE(s.insert_baseline(b).has_value());
  auto got = s.latest_baseline("ph", "NVIDIA H200", "triton");
  ASSERT_TRUE(got.has_value() && got->has_value());
  EXPECT_DOUBLE_EQ(*(*got)->eager_us, 9);
  EXPECT_DOUBLE_EQ(*(*got)->compile_us, 7);
  auto none = s.latest_baseline("ph", "cpu", "cpu");
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->has_value());
}

TEST_F(StoreTest, EvaluationMustReferenceExistingRows) {
  auto s = open();
  auto e = s.insert_evaluation(evaluation(1234, 5678, "correct"));
  EXPECT_FALSE(e.has_value());
  EXPECT_EQ(s.count_evaluations().value_or(-1), 0);
}

TEST_F(StoreTest, SecondConnectionSeesCommittedRows) {
  auto writer = open();
  auto reader = open();
  auto p = writer.upsert_problem({"ph", "P", "/p.py", std::nullopt, std::nullopt, "src"});
  auto c = writer.upsert_candidate({"ch", "src", "/c.py"});
  ASSERT_TRUE(p && c);
  ASSERT_TRUE(writer.insert_evaluation(evaluation(*p, *c, "correct")).has_value());
  EXPECT_EQ(reader.count_evaluations().value_or(-1), 1);
}

TEST_F(StoreTest, DatabaseReportsSqlErrors) {
  auto db = Database::open(path_);
  ASSERT_TRUE(db.has_value());
  auto r = db->exec("THIS IS NOT SQL");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("syntax error"), std::string::npos) << r.error().message;
  auto st = db->prepare("SELECT * FROM no_such_table");
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.error().message.find("no_such_table"), std::string::npos);
}

TEST(StorePaths, DefaultPathIsUnderXdgDataHome) {
  const char* old = std::getenv("XDG_DATA_HOME");
  std::string saved = old ? old : "";
  ::setenv("XDG_DATA_HOME", "/tmp/ok-xdg-data", 1);
  EXPECT_EQ(Store::default_path(), fs::path("/tmp/ok-xdg-data/openkernel/openkernel.db"));
  if (old)
    ::setenv("XDG_DATA_HOME", saved.c_str(), 1);
  else
    ::unsetenv("XDG_DATA_HOME");
}

// Processes opening a fresh database together must all succeed (no "database is locked").
TEST_F(StoreTest, ConcurrentFirstOpensAllSucceed) {
  constexpr int kRounds = 3, kChildren = 8;
  for (int round = 0; round < kRounds; ++round) {
    path_ = dir_ / ("race" + std::to_string(round) + ".db");
    std::vector<pid_t> children;
    for (int i = 0; i < kChildren; ++i) {
      pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) _exit(Store::open(path_).has_value() ? 0 : 1);
      children.push_back(pid);
    }
    int failed = 0;
    for (pid_t pid : children) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    EXPECT_EQ(failed, 0) << "round " << round;
    auto s = open();
    EXPECT_EQ(scalar(s.db(), "PRAGMA user_version"), latest());
  }
}
