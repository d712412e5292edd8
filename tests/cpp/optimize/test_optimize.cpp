// The optimiser's pure parts: prompt templates, the heuristic critic, the LLM agents' handling of
// good and malformed replies (through a scripted provider), reports, and sessions in the store.
#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <fstream>

#include "llm/json_schema.hpp"
#include "optimize/agents.hpp"
#include "optimize/prompts.hpp"
#include "optimize/report.hpp"
#include "optimize/session.hpp"
#include "store/store.hpp"
#include "util/paths.hpp"

namespace {

using nlohmann::json;
namespace opt = ok::optimize;

const std::filesystem::path kRoot = OPENKERNEL_TEST_SOURCE_ROOT;

std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("ok_optimize_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

opt::ProblemContext problem(const std::string& backend = "triton") {
  opt::ProblemContext p;
  p.name = "19_ReLU";
  p.backend = backend;
  p.source =
      "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
      "        return torch.relu(x)\n";
  p.inspect = {{"flops", 1000000},
               {"bytes", 8000000},
               {"inputs", json::array({{{"shape", {1000, 1000}}, {"dtype", "float32"}}})}};
  p.device = {{"name", "NVIDIA H200"}, {"sm_count", 132}};
  return p;
}

json correct_result(double runtime_us, double bandwidth = 4e12) {
  return {
      {"verdict", "correct"},
      {"correct", true},
      {"valid", true},
      {"compiled", true},
      {"speedup", 1.5},
      {"reasons", json::array()},
      {"flags", json::array()},
      {"runtime_us", {{"median", runtime_us}}},
      {"ref_runtime_us", {{"median", runtime_us * 1.5}}},
      {"roofline",
       {{"flops", 1000000},
        {"bytes", 8000000},
        {"bandwidth_bytes_per_s", bandwidth},
        {"peak_flops", 1e15},
        {"fraction_of_speed_of_light", 8e6 / bandwidth * 1e6 / runtime_us}}},
      {"profile",
       {{"kernel_table",
         json::array(
             {{{"name", "relu_kernel"}, {"launches", 1}, {"us", runtime_us}, {"share", 1.0}}})}}}};
}

TEST(Prompts, RenderSectionsListsAndNoEscaping) {
  opt::Template t{"t",
                  "{{! prompt t version 3 }}a {{x}} {{#list}}[{{.}}]{{/list}}{{#s}}<{{.}}>{{/s}}"
                  "{{^missing}}none{{/missing}}",
                  0};
  auto r = opt::render(t, {{"x", "<b>&"}, {"list", {"1", "2"}}, {"s", "y"}, {"missing", nullptr}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "a <b>& [1][2]<y>none");
}

TEST(Prompts, BrokenTemplateIsBadInput) {
  auto r = opt::render({"bad", "{{#open}} never closed", 0}, json::object());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ok::util::ErrorKind::kBadInput);
  EXPECT_NE(r.error().message.find("bad"), std::string::npos);
}

TEST(Prompts, ShippedTemplatesLoadWithVersionsAndRender) {
  for (const char* name : {"generator_system", "generator", "critic_system", "critic"}) {
    auto t = opt::load_template(kRoot / "data/prompts", name);
    ASSERT_TRUE(t) << name << ": " << t.error().message;
    EXPECT_GE(t->version, 1) << name;
    json ctx = {{"name", "p"},
                {"reference_source", "class Model: pass"},
                {"backend", "cpu"},
                {"backend_cpu", true},
                {"device_specs", {"name: x"}},
                {"has_attempts", true},
                {"attempts", json::array({{{"number", 1},
                                           {"verdict", "compile_error"},
                                           {"error", "E1 bad"},
                                           {"has_error", true},
                                           {"speedup", nullptr}}})},
                {"diagnosis",
                 {{"bottleneck", "correctness"},
                  {"evidence", {"e"}},
                  {"suggestions", json::array({{{"action", "fix it"}}})}}}};
    auto r = opt::render(*t, ctx);
    ASSERT_TRUE(r) << name << ": " << r.error().message;
    if (std::string(name) == "generator") {
      EXPECT_NE(r->find("class Model: pass"), std::string::npos);
      EXPECT_NE(r->find("compile_cpp"), std::string::npos);  // the CPU backend section
      EXPECT_EQ(r->find("@triton.jit"), std::string::npos);  // not the Triton one
      EXPECT_NE(r->find("E1 bad"), std::string::npos);
      EXPECT_NE(r->find("fix it"), std::string::npos);
    }
  }
}

TEST(Prompts, TrimMiddleKeepsHeadAndTail) {
  std::string s = "HEAD" + std::string(5000, 'x') + "TAIL";
  auto t = opt::trim_middle(s, 300);
  EXPECT_LT(t.size(), 400u);
  EXPECT_EQ(t.substr(0, 4), "HEAD");
  EXPECT_EQ(t.substr(t.size() - 4), "TAIL");
  EXPECT_NE(t.find("characters cut"), std::string::npos);
  EXPECT_EQ(opt::trim_middle("short", 300), "short");
}

TEST(Critic, HeuristicClassesMatchTheEvidence) {
  auto p = problem();
  opt::Attempt a;
  json failed = {{"verdict", "compile_error"}, {"reasons", {"compiling failed: E0020 bad"}}};
  auto d = opt::heuristic_diagnosis(p, a, failed);
  EXPECT_EQ(d["bottleneck"], "correctness");
  EXPECT_TRUE(ok::llm::validate_json(d, opt::diagnosis_schema()).empty());
  EXPECT_NE(d["evidence"].dump().find("E0020"), std::string::npos);

  // 8 MB in 10 us = 800 GB/s of 4 TB/s: a memory-bound kernel far from the ceiling.
  d = opt::heuristic_diagnosis(p, a, correct_result(10));
  EXPECT_EQ(d["bottleneck"], "occupancy");
  EXPECT_TRUE(ok::llm::validate_json(d, opt::diagnosis_schema()).empty());
  // 8 MB in 2.2 ms on a 4 GB/s ceiling: 91% of the copy bandwidth, memory-bound.
  d = opt::heuristic_diagnosis(p, a, correct_result(2200, 4e9));
  EXPECT_EQ(d["bottleneck"], "memory");
  EXPECT_NE(d["evidence"].dump().find("GB/s"), std::string::npos);
}

// A provider that answers from a script and remembers what it was asked.
class ScriptedProvider final : public ok::llm::Provider {
 public:
  explicit ScriptedProvider(std::deque<std::string> replies, std::vector<std::string>* seen)
      : replies_(std::move(replies)), seen_(seen) {}
  std::expected<ok::llm::Response, ok::llm::AttemptError> send(const ok::llm::Request& req,
                                                               const ok::llm::AttemptOptions&,
                                                               ok::llm::StreamSink*) override {
    seen_->push_back(req.system + "\n----\n" + req.messages.back().content);
    ok::llm::Response r;
    r.text = replies_.empty() ? "" : replies_.front();
    if (!replies_.empty()) replies_.pop_front();
    r.stop_reason = "end";
    r.usage = {100, 50, 0, false, std::nullopt};
    return r;
  }

 private:
  std::deque<std::string> replies_;
  std::vector<std::string>* seen_;
};

ok::llm::Endpoint endpoint() {
  ok::llm::Endpoint ep;
  ep.display = "test/model";
  ep.model_id = "model";
  ep.base_url = "http://127.0.0.1:1";
  ok::llm::ModelInfo info;
  info.price_in_per_mtok = 1.0;
  info.price_out_per_mtok = 2.0;
  ep.info = info;  // 100 tokens in, 50 out: $0.0002 a call
  return ep;
}

TEST(LlmGenerator, UsesCodeAndRecordsMalformedRepliesAsFailures) {
  std::vector<std::string> seen;
  ok::llm::ClientOptions co;
  co.retry.max_retries = 0;
  ok::llm::Client client(
      endpoint(),
      std::make_unique<ScriptedProvider>(
          std::deque<std::string>{
              "Fuse it.\n```python\nimport torch\nclass ModelNew:\n    pass\n```\n",
              "I would rather not write code today.",
              "Cut off:\n```python\nclass ModelNew:\n    def f("},
          &seen),
      co);
  auto gen = opt::make_llm_generator(client, kRoot / "data/prompts", kRoot / "data/skills", "s1");
  auto p = problem("cpu");
  std::vector<opt::Attempt> history;
  auto g1 = gen->next(p, history);
  EXPECT_TRUE(g1.error.empty()) << g1.error;
  EXPECT_NE(g1.source.find("class ModelNew"), std::string::npos);
  EXPECT_EQ(g1.description, "Fuse it.");
  EXPECT_GE(g1.params.value("prompt_version", 0), 1);
  EXPECT_NEAR(g1.cost_usd, 0.0002, 1e-9);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].find("torch.relu(x)"), std::string::npos);  // the reference is in the prompt
  EXPECT_NE(seen[0].find("NVIDIA H200"), std::string::npos);    // and the device

  opt::Attempt a;
  a.number = 1;
  a.verdict = "incorrect";
  a.error = "trial 1: max abs error 3.5 at index 17";
  a.diagnosis = {
      {"bottleneck", "correctness"},
      {"evidence", {"mismatch"}},
      {"suggestions", json::array({{{"action", "mask the tail"}, {"expected_gain", 0}}})}};
  history.push_back(a);
  auto g2 = gen->next(p, history);
  EXPECT_TRUE(g2.source.empty());
  EXPECT_NE(g2.error.find("malformed"), std::string::npos);
  EXPECT_FALSE(g2.exhausted);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NE(seen[1].find("max abs error 3.5"), std::string::npos);  // feedback reaches the model
  EXPECT_NE(seen[1].find("mask the tail"), std::string::npos);

  auto g3 = gen->next(p, history);
  EXPECT_TRUE(g3.source.empty());
  EXPECT_NE(g3.error.find("cut off"), std::string::npos);
}

TEST(LlmCritic, ValidReplyIsUsedAndBrokenOneFallsBack) {
  std::vector<std::string> seen;
  ok::llm::ClientOptions co;
  co.retry.max_retries = 0;
  ok::llm::Client client(
      endpoint(),
      std::make_unique<ScriptedProvider>(
          std::deque<std::string>{
              R"({"bottleneck": "memory", "evidence": ["800 GB/s"], "suggestions":
                 [{"action": "vectorise", "expected_gain": 0.4}], "expected_gain": 0.4})",
              "not json at all", "still {not json"},
          &seen),
      co);
  auto critic = opt::make_llm_critic(client, kRoot / "data/prompts", "s1");
  auto p = problem();
  opt::Attempt a;
  a.verdict = "correct";
  double cost = 0;
  auto d = critic->diagnose(p, a, correct_result(10), cost);
  EXPECT_EQ(d["bottleneck"], "memory");
  EXPECT_EQ(d["source"], "model");
  EXPECT_GT(cost, 0);
  d = critic->diagnose(p, a, correct_result(10), cost);  // malformed twice (with the repair)
  EXPECT_EQ(d["source"], "heuristic");
  EXPECT_TRUE(d.contains("note"));
}

// The model critic's prompt carries a deep profile's numbers (the rule-based reading it quotes:
// the dominant kernel's metrics and ncu's evidence, bounded to one kernel; docs/profiling.md).
TEST(LlmCritic, PromptCarriesTheDeepProfile) {
  std::vector<std::string> seen;
  ok::llm::ClientOptions co;
  co.retry.max_retries = 0;
  ok::llm::Client client(endpoint(),
                         std::make_unique<ScriptedProvider>(std::deque<std::string>{}, &seen), co);
  auto critic = opt::make_llm_critic(client, kRoot / "data/prompts", "s1");
  json r = correct_result(10);
  r["profile"] = {
      {"tier", "deep"},
      {"kernel_metrics", json::array({{{"name", "relu_kernel"},
                                       {"duration_us", 9.0},
                                       {"dram_throughput_pct", 21.5},
                                       {"sm_throughput_pct", 12.0},
                                       {"achieved_occupancy_pct", 17.25},
                                       {"registers_per_thread", 96.0},
                                       {"occupancy_limiter", {{"by", {"registers"}}}}}})}};
  opt::Attempt a;
  a.verdict = "correct";
  double cost = 0;
  auto d = critic->diagnose(problem(), a, r, cost);
  EXPECT_EQ(d["bottleneck"], "occupancy");  // the model's reply was empty: the heuristic's
  ASSERT_FALSE(seen.empty());
  EXPECT_NE(seen[0].find("\"achieved_occupancy_pct\": 17.25"), std::string::npos) << seen[0];
  EXPECT_NE(seen[0].find("registers limit occupancy (96 per thread)"), std::string::npos);
}

TEST(Report, KeysVerdictsAndMarkdown) {
  opt::Options o;
  o.name = "19_ReLU";
  o.reference = "/r.py";
  o.backend = "cpu";
  o.model = "builtin";
  opt::Outcome out;
  out.session = "s1";
  out.status = "finished";
  out.stop_reason = "iterations";
  auto j = opt::report_json(o, out);
  for (const char* k : {"session", "verdict", "speedup", "speedup_compile", "best_candidate",
                        "attempts", "cost_usd"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["verdict"], "no_attempts");
  EXPECT_TRUE(j["speedup"].is_null());

  opt::Attempt bad;
  bad.number = 1;
  bad.verdict = "incorrect";
  bad.evaluation_id = 7;
  bad.error = "mismatch";
  out.attempts.push_back(bad);
  EXPECT_EQ(opt::report_json(o, out)["verdict"], "incorrect");

  opt::Attempt good;
  good.number = 2;
  good.verdict = "correct";
  good.correct = true;
  good.speedup = 2.5;
  good.runtime_us = 40;
  good.evaluation_id = 8;
  good.summary = {
      {"roofline",
       {{"bytes", 8e6}, {"bandwidth_bytes_per_s", 4e11}, {"fraction_of_speed_of_light", 0.5}}}};
  out.attempts.push_back(good);
  out.best = 1;
  out.best_path = "/out/best_19_ReLU.py";
  out.compile_runtime_us = 80;
  j = opt::report_json(o, out);
  EXPECT_EQ(j["verdict"], "correct");
  EXPECT_DOUBLE_EQ(j["speedup"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(j["speedup_compile"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["bandwidth_fraction"].get<double>(), 0.5);  // 8e6 B / 40 us = 2e11 B/s
  EXPECT_EQ(j["attempts"], 2);
  EXPECT_EQ(j["history"].size(), 2u);
  auto md = opt::report_markdown(j);
  EXPECT_NE(md.find("| correct | 2.500x | 2.000x |"), std::string::npos) << md;
  EXPECT_NE(md.find("mismatch"), std::string::npos);
}

TEST(Session, OptionsAndAttemptsRoundTripThroughTheStore) {
  auto dir = temp_dir("store");
  auto st = ok::store::Store::open(dir / "db.sqlite");
  ASSERT_TRUE(st) << st.error().message;
  opt::Options o;
  o.reference = "/r.py";
  o.name = "r";
  o.level = 1;
  o.overrides = {{"batch_size", "4"}};
  o.backend = "cpu";
  o.model = "builtin";
  o.iterations = 3;
  o.budget_usd = 1.5;
  o.out_dir = dir / "out";
  o.seed = 42;
  auto back = opt::Options::from_json(json::parse(o.to_json().dump()));
  EXPECT_EQ(back.to_json(), o.to_json());

  auto s = opt::new_session_row(opt::new_session_id(), o);
  EXPECT_EQ(s.id[0], 's');
  EXPECT_EQ(s.status, "running");
  EXPECT_EQ(s.options_json, o.to_json().dump());
  ASSERT_TRUE(st->insert_session(s));
  ok::store::AttemptRow a;
  a.session = s.id;
  a.number = 1;
  a.generator = "builtin";
  a.verdict = "correct";
  a.correct = true;
  a.speedup = 2.0;
  a.params_json = R"({"BLOCK": 1024})";
  a.diagnosis_json = R"({"bottleneck": "memory"})";
  ASSERT_TRUE(st->insert_attempt(a));
  EXPECT_FALSE(st->insert_attempt(a));  // (session, number) is unique
  s.status = "finished";
  s.best_attempt = 1;
  s.best_speedup = 2.0;
  ASSERT_TRUE(st->update_session(s));
  auto found = st->find_session(s.id);
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->status, "finished");
  EXPECT_EQ((*found)->best_speedup, 2.0);
  auto rows = st->attempts(s.id);
  ASSERT_TRUE(rows);
  auto attempts = opt::attempts_from_rows(*rows);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].params["BLOCK"], 1024);
  EXPECT_EQ(attempts[0].diagnosis["bottleneck"], "memory");
  auto none = st->find_session("nope");
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  std::filesystem::remove_all(dir);
}

}  // namespace
