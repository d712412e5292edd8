// Trajectory memory through a real optimize session: run_session drives the LLM generator over
// llm::Client against the loopback model server (tests/cpp/llm/fake_server), whose 40 scripted
// replies are kernels that a fake evaluation worker (a Python script speaking the worker
// protocol) answers with the verdict each kernel names: correct, compile errors, mismatches,
// rejections, crashes, timeouts; some replies hold no code at all. Every generator call is
// recorded in the store; the test reads the recorded prompts back and checks that each stayed
// within its stated budget and that the last one still names the best kernel, the last attempts
// and every distinct failure class, with the characters / 4 estimate beside the reported usage.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "../llm/fake_server.hpp"
#include "../support/fake_worker.hpp"
#include "../support/temp_dir.hpp"
#include "llm/client.hpp"
#include "llm/recorder.hpp"
#include "optimize/session.hpp"
#include "optimize/trajectory.hpp"
#include "util/paths.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace ok::optimize;

namespace {

const fs::path kRoot = OPENKERNEL_TEST_SOURCE_ROOT;

// Answers hello, then each evaluation with the result the candidate names on its `# FAKE {json}`
// line.
constexpr const char* kFakeWorker = R"py(
import json, sys, hashlib
print(json.dumps({"type": "hello", "ok": True, "protocol": 2, "versions": {"fake": 1}}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    src = open(req["candidate"]).read()
    named = json.loads(src.split("# FAKE ", 1)[1].split("\n", 1)[0])
    result = {"valid": True, "compiled": named["verdict"] != "compile_error", "flags": [],
              "reasons": [], "runtime_us": {"median": 50.0}, "ref_runtime_us": {"median": 100.0},
              "problem": {"source_hash": "ref-hash", "source": "reference"},
              "candidate": {"source_hash": hashlib.sha256(src.encode()).hexdigest(),
                            "source": "candidate"}}
    result.update(named)
    result["correct"] = named["verdict"] == "correct"
    print(json.dumps({"id": req["id"], "ok": True, "result": result}), flush=True)
)py";

// The model's reply for attempt i: a kernel naming its evaluation, or (every eighth from the
// fifth) prose without code. Attempt 9 is the best; attempt 2's failure class occurs only there.
std::string reply(int i) {
  json named;
  switch (i % 8) {
    case 1:
    case 7:
      named = {{"verdict", "correct"}, {"speedup", i == 9 ? 3.0 : 1.0 + i / 100.0}};
      break;
    case 2:
      named = {{"verdict", "compile_error"},
               {"reasons", {fmt::format("error: identifier \"tile_{}\" is undefined", i)}}};
      if (i == 2)
        named = {{"verdict", "runtime_error"},
                 {"reasons", {"Traceback:\nNameError: name 'tl' is not defined"}}};
      break;
    case 3:
      named = {{"verdict", "incorrect"},
               {"reasons", {fmt::format("trial 1: max abs error 0.{} at index {}", i, i * 7)}}};
      break;
    case 4:
      named = {{"verdict", "rejected"},
               {"flags", {"fallback"}},
               {"reasons", {"the main work runs in torch.matmul"}}};
      break;
    case 5:
      return fmt::format("Attempt {}: I would rather describe the idea than write it.", i);
    case 6:
      named = {{"verdict", "runtime_error"},
               {"reasons", {fmt::format("RuntimeError: shape mismatch at dim {}", i % 3)}}};
      break;
    default:
      named = {{"verdict", "timeout"}, {"reasons", {"timed out after 10 s"}}};
  }
  std::string code = fmt::format(
      "# FAKE {}\nimport torch\n\nclass ModelNew(torch.nn.Module):\n"
      "    def forward(self, x):\n        return torch.relu(x)\n",
      named.dump());
  for (int l = 0; l < 150; ++l) code += fmt::format("# padding line {} of attempt {}\n", l, i);
  return fmt::format("Idea {}: tile the rows by {}.\n```python\n{}```\n", i, 16 * (i % 5 + 1),
                     code);
}

TEST(MemorySession, FortyAttemptPromptsStayWithinBudgetAndRememberWhatMatters) {
  ok::testing::TempDir dir("ok-memory");
  ASSERT_TRUE(ok::util::write_file(dir.path() / "worker.py", kFakeWorker));
  ASSERT_TRUE(ok::util::write_file(dir.path() / "reference.py",
                                   "import torch\nclass Model(torch.nn.Module):\n"
                                   "    def forward(self, x):\n        return torch.relu(x)\n"));
  const fs::path db = dir.path() / "db.sqlite";
  auto st = ok::store::Store::open(db);
  ASSERT_TRUE(st) << st.error().message;
  auto recorder = ok::llm::StoreRecorder::open(db);
  ASSERT_TRUE(recorder) << recorder.error().message;

  ok::llm::testing::FakeLlmServer server;
  std::vector<ok::llm::testing::Step> steps;
  for (int i = 1; i <= 40; ++i) {
    ok::llm::testing::Step s;
    s.text = reply(i);
    steps.push_back(s);
  }
  server.script(steps);

  ok::llm::Endpoint ep;
  ep.provider.name = "openai";
  ep.base_url = server.openai_url();
  ep.model_id = "stub";
  ep.display = "openai/stub";
  ep.key_source = "none needed";
  ok::llm::Ledger ledger;
  ok::llm::ClientOptions co;
  co.retry.max_retries = 0;
  co.ledger = &ledger;
  co.recorder = recorder->get();
  ok::llm::Client client(ep, co);
  // A tight budget, so that the memory must be trimmed as the session grows.
  const PromptBudgets budgets = PromptBudgets{}.scaled_to(4000);
  const std::string id = "s-memory";
  auto generator =
      make_llm_generator(client, kRoot / "data/prompts", kRoot / "data/skills", id, budgets);
  auto critic = make_heuristic_critic();

  Options o;
  o.reference = (dir.path() / "reference.py").string();
  o.name = "relu";
  o.backend = "cpu";
  o.model = ep.display;
  o.iterations = 40;
  o.in_flight = 1;
  o.out_dir = dir.path() / "out";
  ASSERT_TRUE(st->insert_session(new_session_row(id, o)));
  auto w = ok::testing::fake_worker(dir.path() / "worker.py");
  ASSERT_TRUE(w) << w.error().message;
  std::atomic<bool> cancel{false};
  Dependencies deps;
  deps.worker = &*w;
  deps.store = &*st;
  deps.generator = generator.get();
  deps.critic = critic.get();
  deps.ledger = &ledger;
  deps.cancel = &cancel;
  ProblemContext problem;
  problem.reference_path = o.reference;
  problem.name = o.name;
  problem.backend = o.backend;
  problem.source = *ok::util::read_file(o.reference);
  problem.inspect = {{"flops", 1000000}, {"bytes", 8000000}, {"inputs", json::array()}};
  problem.device = json{{"name", "a test CPU"}};
  auto out = run_session(id, o, problem, {}, deps);
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->attempts.size(), 40u) << out->stop_reason;
  ASSERT_TRUE(out->best);
  EXPECT_EQ(out->attempts[*out->best].number, 9);

  auto q = st->db().prepare(
      "SELECT request, input_tokens, usage_estimated FROM llm_calls WHERE session = ? AND "
      "purpose = 'generator' ORDER BY id");
  ASSERT_TRUE(q);
  q->bind(1, id);
  std::vector<json> requests;
  while (*q->step()) {
    json req = json::parse(q->col_text(0));
    // The estimate beside the provider's reported usage.
    EXPECT_GT(req.value("estimated_input_tokens", 0), 0);
    EXPECT_EQ(q->col_int(1), 12);  // what the stub reports
    EXPECT_EQ(q->col_int(2), 0);
    requests.push_back(std::move(req));
  }
  ASSERT_EQ(requests.size(), 40u);
  const size_t first_prompt = requests[0]["messages"][0]["content"].get<std::string>().size();
  for (const auto& req : requests) {
    const json& memory = req["prompt_sections"];
    EXPECT_FALSE(memory["over_budget"].get<bool>()) << memory.dump();
    EXPECT_LE(memory["chars"].get<size_t>(), PromptBudgets::chars(budgets.total));
    for (const auto& s : memory["sections"])
      EXPECT_LE(s["chars"].get<size_t>(), s["budget_chars"].get<size_t>()) << s.dump();
    // Checked on the prompt itself: what grew beyond the first prompt is within the budget (and
    // the search's direction line, which changes from call to call).
    const size_t size = req["messages"][0]["content"].get<std::string>().size();
    EXPECT_LE(size, first_prompt + PromptBudgets::chars(budgets.total) + 400);
  }
  // The 40th prompt saw attempts 1..39.
  const std::string last = requests.back()["messages"][0]["content"];
  EXPECT_NE(last.find("best correct kernel so far (attempt 9, 3.000x"), std::string::npos) << last;
  for (int n = 36; n <= 39; ++n) {
    const Attempt& a = out->attempts[static_cast<size_t>(n - 1)];
    EXPECT_NE(last.find(fmt::format("attempt {}: {}", n, a.verdict)), std::string::npos) << n;
  }
  std::map<std::string, int> classes;
  for (int n = 1; n <= 39; ++n) {
    const Attempt& a = out->attempts[static_cast<size_t>(n - 1)];
    if (is_failure(a)) ++classes[(a.verdict + ": " + failure_class(a)).substr(0, 40)];
  }
  EXPECT_GE(classes.size(), 7u);
  for (const auto& [label, count] : classes)
    EXPECT_NE(last.find("- " + label), std::string::npos) << label << "\n" << last;
  EXPECT_NE(last.find("NameError: name 'tl'"), std::string::npos);  // attempt 2's, long ago
  // The attempt carries the estimate and the reported count too.
  const json& pt = out->attempts.back().params["prompt_tokens"];
  EXPECT_EQ(pt["estimated"], requests.back()["estimated_input_tokens"]);
  EXPECT_EQ(pt["reported"], 12);
}

}  // namespace

namespace {

TEST(MemoryOptions, ThePromptBudgetIsKeptWithTheSessionAndOldSessionsGetTheDefault) {
  Options o;
  o.prompt_budget_tokens = 4000;
  EXPECT_EQ(Options::from_json(o.to_json()).prompt_budget_tokens, 4000);
  json old = o.to_json();
  old.erase("prompt_budget_tokens");
  EXPECT_EQ(Options::from_json(old).prompt_budget_tokens, 0);
}

}  // namespace
