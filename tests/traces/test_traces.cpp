// The trace export over a store built here with hand-computed expectations: the rewards of every
// verdict, each filter, dedupe by normalised code hash, the link of LLM calls to attempts, the
// processed tables and the export's refusals (unknown format, empty store, filters keeping
// nothing, an --out that cannot be written or is not an earlier export).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "store/store.hpp"
#include "support/temp_dir.hpp"
#include "traces/datasets.hpp"
#include "traces/export.hpp"
#include "traces/trace.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using ok::store::Store;
using ok::traces::Filters;
using ok::util::ErrorKind;

namespace {

const char* kCode = "import torch\n# a comment\n\nclass ModelNew:\n    pass  \n";
// The same code after normalisation: CRLF, another comment, blank lines, trailing spaces.
const char* kSameCode = "# Generated header\r\nimport torch\r\n\r\nclass ModelNew:\r\n    pass\r\n";

class TracesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::open(temp_.path() / "store.db");
    ASSERT_TRUE(s.has_value()) << s.error().message;
    store_.emplace(std::move(*s));
  }

  int64_t problem(const std::string& hash, std::optional<int> level, std::optional<int> number) {
    auto id = store_->upsert_problem(
        {hash, "Prob_" + hash, "/p/" + hash + ".py", level, number, "class Model: pass # " + hash});
    EXPECT_TRUE(id.has_value());
    return *id;
  }

  void session(const std::string& id, int64_t prob, const std::string& backend,
               const std::string& model, const std::string& started) {
    ok::store::SessionRow s;
    s.id = id;
    s.problem_id = prob;
    s.reference = "/p/ref.py";
    s.name = id;
    s.backend = backend;
    s.model = model;
    s.mode = "fast";
    s.status = "finished";
    s.options_json = R"({"iterations": 8, "budget_usd": 1.5, "search": "engine"})";
    ASSERT_TRUE(store_->insert_session(s).has_value());
    ASSERT_TRUE(
        store_->db()
            .exec("UPDATE sessions SET created_at = '" + started + "' WHERE id = '" + id + "'")
            .has_value());
  }

  // One attempt; `speedup` and `compile` land in the evaluation's result when it has one.
  void attempt(const std::string& session, int64_t prob, int number, const std::string& verdict,
               std::optional<double> speedup, const char* code, std::optional<double> compile = {},
               const std::string& diagnosis = "") {
    ok::store::AttemptRow a;
    a.session = session;
    a.number = number;
    a.generator = "builtin";
    a.verdict = verdict;
    a.correct = verdict == "correct";
    a.speedup = speedup;
    a.diagnosis_json = diagnosis;
    a.params_json = R"({"intent": {"id": 3, "title": "fuse the chain"}})";
    if (code) {
      auto cid = store_->upsert_candidate({"h" + session + std::to_string(number), code, "/c.py"});
      ASSERT_TRUE(cid.has_value());
      a.candidate_id = *cid;
      ok::store::EvaluationRow e;
      e.problem_id = prob;
      e.candidate_id = *cid;
      e.session = session;
      e.verdict = verdict;
      e.backend = "cpu";
      e.device = "cpu";
      json r = {
          {"verdict", verdict},
          {"compiled", verdict != "compile_error"},
          {"flags", verdict == "rejected" ? json::array({"below_physical_floor"}) : json::array()},
          {"device", "cpu"},
          {"versions", {{"torch", "2.5.1"}, {"python", "3.11.2"}}},
          {"runtime_us", {{"median", 50.0}, {"stderr", 1.5}, {"n", 10}}},
          {"ref_runtime_us", {{"median", 100.0}, {"stderr", 2.0}}}};
      if (compile) r["speedup_compile"] = *compile;
      e.result_json = r.dump();
      auto eid = store_->insert_evaluation(e);
      ASSERT_TRUE(eid.has_value());
      a.evaluation_id = *eid;
    }
    ASSERT_TRUE(store_->insert_attempt(a).has_value());
  }

  // Session sa (cpu, builtin, level 1 #19, 2025-06) with seven attempts of every kind; session
  // sb (cuda, a model, a problem given by path, 2026-02) with one attempt and its LLM calls.
  void fill() {
    int64_t p1 = problem("aaa", 1, 19), p2 = problem("bbb", std::nullopt, std::nullopt);
    session("sa", p1, "cpu", "builtin", "2025-06-10T10:00:00.000Z");
    std::string diag = R"({"bottleneck": "memory", "suggestions": [{"action": "fuse",)"
                       R"( "expected_gain": 0.5}], "expected_gain": 0.5, "source": "heuristic"})";
    attempt("sa", p1, 1, "correct", 2.0, kCode, 0.5, diag);
    attempt("sa", p1, 2, "rejected", std::nullopt, "class ModelNew: cheat");
    attempt("sa", p1, 3, "incorrect", std::nullopt, "class ModelNew: wrong");
    attempt("sa", p1, 4, "correct", 100.0, kSameCode, std::nullopt, diag);
    attempt("sa", p1, 5, "correct", std::exp(-2.0), "class ModelNew: slow");
    attempt("sa", p1, 6, "generation_failed", std::nullopt, nullptr);
    attempt("sa", p1, 7, "correct", std::nullopt, "class ModelNew: untimed");
    session("sb", p2, "cuda", "openai/stub", "2026-02-01T00:00:00.000Z");
    attempt("sb", p2, 1, "correct", 1.5, "class ModelNew: model");
    call("sb", 1, "generator",
         R"({"system": "SYS", "messages": [{"role": "user", "content": "U"}]})", "REPLY", 100, 40);
    call("sb", 1, "critic", R"({"system": "C", "messages": []})", "{}", 10, 5);
  }

  void call(const std::string& session, int attempt, const std::string& purpose,
            const std::string& request, const std::string& response, int64_t in, int64_t out) {
    ok::store::LlmCallRow c;
    c.session = session;
    c.purpose = purpose;
    c.provider = "openai";
    c.model = "stub";
    c.base_url = "http://127.0.0.1";
    c.request_json = request;
    c.response = response;
    c.status = "ok";
    c.input_tokens = in;
    c.output_tokens = out;
    c.started_at = "2026-02-01T00:00:01.000Z";
    json req = json::parse(request);
    req["attempt"] = attempt;
    c.request_json = req.dump();
    ASSERT_TRUE(store_->insert_llm_call(c).has_value());
  }

  std::vector<json> rows(const Filters& f = {}) {
    auto c = ok::traces::collect(*store_, f);
    EXPECT_TRUE(c.has_value()) << c.error().message;
    return c->rows;
  }

  static std::vector<std::string> keys(const std::vector<json>& rows) {
    std::vector<std::string> out;
    for (const auto& r : rows)
      out.push_back(r["session_id"].get<std::string>() + "/" +
                    std::to_string(r["attempt"].get<int>()));
    return out;
  }

  // Staging directories (and replaced exports) left beside the export.
  int partial_siblings() const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(temp_.path()))
      n += e.path().filename().string().find("partial") != std::string::npos;
    return n;
  }

  ok::testing::TempDir temp_{"ok-traces"};
  std::optional<Store> store_;
};

TEST_F(TracesTest, RewardsFollowTheOneDefinition) {
  fill();
  auto r = rows();
  ASSERT_EQ(r.size(), 8u);
  EXPECT_DOUBLE_EQ(r[0]["reward"].get<double>(), std::log(2.0));
  EXPECT_DOUBLE_EQ(r[0]["reward_compile"].get<double>(), std::log(0.5));
  EXPECT_EQ(r[1]["reward"], -1.0);  // rejected
  EXPECT_EQ(r[1]["reward_compile"], -1.0);
  EXPECT_EQ(r[2]["reward"], 0.0);         // incorrect
  EXPECT_EQ(r[3]["reward"], 3.0);         // ln 100 = 4.6, clipped
  EXPECT_EQ(r[4]["reward"], -1.0);        // ln e^-2 = -2, clipped
  EXPECT_EQ(r[5]["reward"], 0.0);         // generation failed
  EXPECT_TRUE(r[6]["reward"].is_null());  // correct, no speedup
  // speedup_compile from the session's compile time is absent: none known.
  EXPECT_TRUE(r[2]["speedup_compile"].is_null());
}

TEST_F(TracesTest, RowsCarryTheSessionAndAttemptFields) {
  fill();
  auto r = rows();
  const json& a = r[0];
  EXPECT_EQ(a["schema_version"], 1);
  EXPECT_EQ(a["benchmark"], "KernelBench");
  EXPECT_EQ(a["benchmark_id"], "level1/19_Prob_aaa");
  EXPECT_EQ(a["hardware"], "cpu");
  EXPECT_EQ(a["torch_version"], "2.5.1");
  EXPECT_TRUE(a["triton_version"].is_null());
  EXPECT_EQ(a["intent"], "fuse the chain");
  EXPECT_EQ(a["runtime_us"], 50.0);
  EXPECT_EQ(a["runtime_stderr_us"], 1.5);
  EXPECT_EQ(a["runtime_n"], 10);
  EXPECT_EQ(a["eager_us"], 100.0);
  EXPECT_EQ(a["diagnosis_bottleneck"], "memory");
  EXPECT_EQ(json::parse(a["budgets"].get<std::string>()),
            json({{"iterations", 8}, {"budget_usd", 1.5}}));
  EXPECT_EQ(a["search_policy"], "engine");
  EXPECT_EQ(r[1]["flags"], json::array({"below_physical_floor"}));
  EXPECT_TRUE(r[5]["flags"].is_null());
  EXPECT_TRUE(r[5]["code"].is_null());
  const json& b = r[7];  // the model's attempt: its prompt, reply and both calls' tokens
  EXPECT_TRUE(b["benchmark"].is_null());
  EXPECT_EQ(b["messages"], json::parse(R"([{"role": "system", "content": "SYS"},
                                           {"role": "user", "content": "U"}])"));
  EXPECT_EQ(b["response"], "REPLY");
  EXPECT_EQ(b["llm_calls"], 2);
  EXPECT_EQ(b["input_tokens"], 110);
  EXPECT_EQ(b["output_tokens"], 45);
  EXPECT_TRUE(a["messages"].is_null());
}

TEST_F(TracesTest, FiltersKeepWhatTheyName) {
  fill();
  EXPECT_EQ(keys(rows({.correct_only = true})),
            (std::vector<std::string>{"sa/1", "sa/4", "sa/5", "sa/7", "sb/1"}));
  EXPECT_EQ(keys(rows({.min_speedup = 1.5})), (std::vector<std::string>{"sa/1", "sa/4", "sb/1"}));
  EXPECT_EQ(keys(rows({.level = 1})).size(), 7u);
  EXPECT_EQ(keys(rows({.backend = "cuda"})), (std::vector<std::string>{"sb/1"}));
  EXPECT_EQ(keys(rows({.model = "builtin"})).size(), 7u);
  EXPECT_EQ(keys(rows({.since = "2026-01-01"})), (std::vector<std::string>{"sb/1"}));
  EXPECT_EQ(keys(rows({.since = "2025-06-10"})).size(), 8u);  // that day counts
  EXPECT_EQ(keys(rows({.since = "2025-06-11"})).size(), 1u);
}

TEST_F(TracesTest, DedupeKeepsTheFirstOfEachNormalisedCode) {
  fill();
  EXPECT_EQ(ok::traces::normalize_code(kCode), "import torch\nclass ModelNew:\n    pass\n");
  EXPECT_EQ(ok::traces::code_hash(kCode), ok::traces::code_hash(kSameCode));
  EXPECT_NE(ok::traces::code_hash(kCode), ok::traces::code_hash("import torch\n"));
  auto c = ok::traces::collect(*store_, {.dedupe = true});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->duplicates, 1);
  auto k = keys(c->rows);
  EXPECT_EQ(k.size(), 7u);
  EXPECT_EQ(std::count(k.begin(), k.end(), "sa/4"), 0);
  EXPECT_EQ(std::count(k.begin(), k.end(), "sa/6"), 1);  // no code: never a duplicate
}

TEST_F(TracesTest, ProcessedTables) {
  fill();
  auto c = ok::traces::collect(*store_, {});
  ASSERT_TRUE(c.has_value());
  auto pairs = ok::traces::training_pairs(c->rows, c->reference_source);
  ASSERT_EQ(pairs.size(), 7u);  // every attempt but the failed generation
  EXPECT_EQ(pairs[0]["prompt_source"], "synthesized");
  EXPECT_EQ(pairs[0]["messages"].back()["content"], std::string("```python\n") + kCode + "\n```");
  EXPECT_NE(pairs[0]["messages"][1]["content"].get<std::string>().find("class Model: pass # aaa"),
            std::string::npos);
  EXPECT_EQ(pairs[6]["prompt_source"], "recorded");
  EXPECT_EQ(pairs[6]["messages"].back(), json({{"role", "assistant"}, {"content", "REPLY"}}));
  auto strategies = ok::traces::strategy_rewards(c->session_rows);
  ASSERT_EQ(strategies.size(), 1u);  // both sessions: no strategy, no class
  EXPECT_EQ(strategies[0]["sessions"], 2);
  EXPECT_EQ(strategies[0]["attempts"], 8);
  EXPECT_EQ(strategies[0]["correct_attempts"], 5);
  EXPECT_EQ(strategies[0]["sessions_faster"], 2);  // best 100 and 1.5
  EXPECT_DOUBLE_EQ(strategies[0]["geomean_best_speedup"].get<double>(), std::sqrt(150.0));
  // Rewards: ln2, -1, 0, 3, -1, 0, (null), ln1.5 -> mean over 7.
  EXPECT_DOUBLE_EQ(strategies[0]["mean_reward"].get<double>(),
                   (std::log(2.0) - 1 + 0 + 3 - 1 + 0 + std::log(1.5)) / 7);
  auto critic = ok::traces::critic_accuracy(c->session_rows);
  ASSERT_EQ(critic.size(), 2u);  // attempts 1 and 4 of sa are diagnosed
  EXPECT_EQ(critic[0]["next_attempt"], 2);
  EXPECT_EQ(critic[0]["best_before"], 2.0);
  EXPECT_EQ(critic[0]["gained"], false);
  EXPECT_EQ(critic[0]["suggested_action"], "fuse");
  EXPECT_EQ(critic[1]["attempt"], 4);
  EXPECT_EQ(critic[1]["best_before"], 100.0);
  EXPECT_EQ(critic[1]["next_speedup"], std::exp(-2.0));
  EXPECT_DOUBLE_EQ(critic[1]["realized_gain"].get<double>(), std::exp(-2.0) / 100 - 1);
}

TEST_F(TracesTest, ExportWritesEveryFileAndReplacesAnEarlierExport) {
  fill();
  fs::path out = temp_.path() / "ds";
  for (int round = 0; round < 2; ++round) {
    auto s = ok::traces::export_traces(*store_, {.out = out, .format = "jsonl"});
    ASSERT_TRUE(s.has_value()) << s.error().message;
    EXPECT_EQ(s->attempts, 8);
    EXPECT_EQ(s->sessions, 2);
    EXPECT_EQ(
        s->files,
        (std::vector<std::string>{
            "metadata/schema.json", "metadata/stats.json", "processed/critic_accuracy_v1.jsonl",
            "processed/strategy_rewards_v1.jsonl", "processed/training_pairs_v1.jsonl",
            "raw/2025-06/session_sa.jsonl", "raw/2026-02/session_sb.jsonl"}));
    for (const auto& f : s->files) EXPECT_TRUE(fs::is_regular_file(out / f)) << f;
  }
  std::ifstream stats(out / "metadata" / "stats.json");
  json j = json::parse(stats);
  EXPECT_EQ(j["attempts"], 8);
  EXPECT_EQ(j["public_benchmark_attempts"], 7);
  EXPECT_EQ(j["verdicts"]["correct"], 5);
  EXPECT_EQ(partial_siblings(), 0);
}

TEST_F(TracesTest, ExportRefusesBadInputAndLeavesNothing) {
  fs::path out = temp_.path() / "ds";
  auto empty = ok::traces::export_traces(*store_, {.out = out});
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(empty.error().message.find("holds no attempts"), std::string::npos);
  fill();
  auto format = ok::traces::export_traces(*store_, {.out = out, .format = "csv"});
  ASSERT_FALSE(format.has_value());
  EXPECT_EQ(format.error().kind, ErrorKind::kUsage);
  auto since = ok::traces::export_traces(*store_, {.out = out, .filters = {.since = "June"}});
  EXPECT_EQ(since.error().kind, ErrorKind::kUsage);
  auto none = ok::traces::export_traces(*store_, {.out = out, .filters = {.level = 9}});
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("passes the filters"), std::string::npos);
  // Under a regular file: cannot be created (whoever runs the test).
  std::ofstream(temp_.path() / "file") << "x";
  auto unwritable = ok::traces::export_traces(*store_, {.out = temp_.path() / "file" / "ds"});
  ASSERT_FALSE(unwritable.has_value());
  EXPECT_EQ(unwritable.error().kind, ErrorKind::kBadInput);
  // A directory with other files is not replaced.
  fs::create_directories(out);
  std::ofstream(out / "mine.txt") << "keep";
  auto other = ok::traces::export_traces(*store_, {.out = out});
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.error().message.find("not an earlier trace export"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "mine.txt"));
  EXPECT_EQ(partial_siblings(), 0);
}

TEST(ParquetWriter, RefusesRowsThatDoNotFitTheSchema) {
  using ok::traces::Field;
  using ok::traces::Physical;
  ok::traces::Schema schema = {Field::primitive("id", Physical::kInt32, false),
                               Field::list("tags", Field::primitive("", Physical::kString, false))};
  auto ok_rows =
      ok::traces::encode_parquet(schema, {json{{"id", 1}}, json{{"id", 2}, {"tags", {"a"}}}});
  ASSERT_TRUE(ok_rows.has_value());
  EXPECT_EQ(ok_rows->substr(0, 4), "PAR1");
  EXPECT_EQ(ok_rows->substr(ok_rows->size() - 4), "PAR1");
  auto missing = ok::traces::encode_parquet(schema, {json{{"id", 1}}, json{{"tags", {"a"}}}});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message, "parquet: row 1: field id is required but null");
  auto wrong = ok::traces::encode_parquet(schema, {json{{"id", "one"}}});
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().message, "parquet: row 0: field id is not an integer");
  auto not_list = ok::traces::encode_parquet(schema, {json{{"id", 1}, {"tags", "a"}}});
  ASSERT_FALSE(not_list.has_value());
  EXPECT_EQ(not_list.error().message, "parquet: row 0: field tags is not a JSON array");
  auto null_element = ok::traces::encode_parquet(schema, {json{{"id", 1}, {"tags", {nullptr}}}});
  ASSERT_FALSE(null_element.has_value());
  EXPECT_EQ(null_element.error().message, "parquet: row 0: field element is required but null");
}

}  // namespace
