// The skill library end to end through the model stub (fake_server): a model session on problem A
// wins with a technique; the skill learnt from it is retrieved for a similar problem B and reaches
// the generator's prompt over HTTP, and the prompt's skill section stays within its budget even
// when the library holds many large skills.
#include <gtest/gtest.h>

#include <filesystem>

#include "fake_server.hpp"
#include "optimize/agents.hpp"
#include "skills/learn.hpp"
#include "skills/library.hpp"
#include "support/temp_dir.hpp"
#include "util/paths.hpp"

namespace {

using nlohmann::json;
namespace sk = ok::skills;
namespace opt = ok::optimize;

const std::filesystem::path kRoot = OPENKERNEL_TEST_SOURCE_ROOT;

ok::llm::Endpoint endpoint(const ok::llm::testing::FakeLlmServer& server) {
  ok::llm::Endpoint ep;
  ep.provider.api = ok::llm::Api::kOpenAI;
  ep.provider.name = "openai";
  ep.base_url = server.openai_url();
  ep.model_id = "stub";
  ep.display = "stub";
  ep.key_source = "none needed";
  return ep;
}

// A softmax over rows of `cols` columns: the graph IR the worker's analyze would give.
opt::ProblemContext softmax(const std::string& name, int rows, int cols) {
  opt::ProblemContext p;
  p.name = name;
  p.backend = "triton";
  p.source =
      "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
      "        return torch.softmax(x, dim=1)\n";
  p.graph = {{"traceable", true},
             {"inputs", {{{"name", "x"}, {"shape", {rows, cols}}, {"dtype", "float32"}}}},
             {"nodes", {{{"op", "softmax"}, {"shape", {rows, cols}}}}}};
  p.inspect = {{"inputs", {{{"shape", {rows, cols}}, {"dtype", "float32"}}}}};
  p.device = {{"kind", "cuda"}, {"name", "NVIDIA H200"}, {"compute_capability", "9.0"}};
  return p;
}

const char* kWinningReply =
    "Online softmax: one program per row keeps the row in registers and rescales the running "
    "max.\n```python\nimport torch\nimport triton\nimport triton.language as tl\n\n"
    "@triton.jit\ndef online_softmax_kernel(x, y, n, BLOCK: tl.constexpr):\n"
    "    row = tl.program_id(0)\n    # ROW-IN-REGISTERS\n    pass\n\n"
    "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n```\n";

std::string prompt_text(const ok::llm::testing::Received& r) {
  std::string out;
  for (const auto& m : r.body.value("messages", json::array()))
    out += m.value("content", std::string()) + "\n";
  return out;
}

TEST(SkillsPrompt, TechniqueFromProblemAReachesTheModelOnProblemB) {
  ok::testing::TempDir dir("ok-skills-prompt");
  ok::llm::testing::FakeLlmServer server;
  server.set_reply(kWinningReply);
  ok::llm::Client client(endpoint(server), {});
  auto gen = opt::make_llm_generator(client, kRoot / "data/prompts", kRoot / "data/skills", "a");
  auto st = ok::store::Store::open(dir.path() / "s.db");
  ASSERT_TRUE(st);
  ASSERT_TRUE(sk::ensure_seeds(*st, kRoot / "data/skills"));

  // Problem A: the model's kernel wins (as the evaluator would have judged it).
  opt::ProblemContext a = softmax("23_Softmax", 4096, 4096);
  auto won = gen->next(a, {});
  ASSERT_TRUE(won.error.empty()) << won.error;
  sk::SessionLesson lesson;
  lesson.session = "session-a";
  lesson.problem = a.name;
  lesson.hardware = "NVIDIA H200";
  lesson.builtin = false;
  lesson.signature = sk::signature_of(a.graph, a.inspect, a.device, a.backend, {});
  lesson.attempts.push_back({.number = 1,
                             .correct = true,
                             .speedup = 2.4,
                             .description = won.description,
                             .source = won.source});
  auto learnt = sk::learn(*st, lesson);
  ASSERT_TRUE(learnt && learnt->learned) << (learnt ? "" : learnt.error().message);

  // Problem B: another softmax, wider rows; the skill ranks first and its technique is sent.
  opt::ProblemContext b = softmax("softmax_wide", 2048, 8192);
  auto sig = sk::signature_of(b.graph, b.inspect, b.device, b.backend, {});
  auto library = sk::load(*st);
  ASSERT_TRUE(library);
  b.library = sk::retrieve(*library, sig, {.query = b.name});
  ASSERT_FALSE(b.library.empty());
  EXPECT_EQ(b.library.front().skill.id, learnt->learned->id);
  auto next = gen->next(b, {});
  ASSERT_TRUE(next.error.empty()) << next.error;
  auto received = server.received();
  ASSERT_EQ(received.size(), 2u);
  const std::string prompt_a = prompt_text(received[0]), prompt_b = prompt_text(received[1]);
  EXPECT_EQ(prompt_a.find("Online softmax"), std::string::npos);
  EXPECT_NE(prompt_b.find("Skills learnt in earlier sessions"), std::string::npos);
  EXPECT_NE(prompt_b.find("Online softmax: one program per row"), std::string::npos);
  EXPECT_NE(prompt_b.find("ROW-IN-REGISTERS"), std::string::npos);  // the exemplar
  EXPECT_NE(prompt_b.find(learnt->learned->id), std::string::npos);
  const std::string section = sk::prompt_section(b.library, sk::kPromptBudgetChars);
  EXPECT_LE(section.size(), sk::kPromptBudgetChars);
  EXPECT_NE(prompt_b.find(section), std::string::npos);
}

TEST(SkillsPrompt, TheSectionStaysWithinItsBudgetWithManyLargeSkills) {
  ok::testing::TempDir dir("ok-skills-budget");
  auto st = ok::store::Store::open(dir.path() / "s.db");
  ASSERT_TRUE(st);
  opt::ProblemContext b = softmax("softmax_wide", 2048, 8192);
  auto sig = sk::signature_of(b.graph, b.inspect, b.device, b.backend, {});
  for (int i = 0; i < 12; ++i) {
    sk::SessionLesson l;
    l.session = "s" + std::to_string(i);
    l.problem = "softmax " + std::to_string(i);
    l.builtin = false;
    l.signature = sig;
    l.attempts.push_back({.number = 1,
                          .correct = true,
                          .speedup = 1.5 + i,
                          .description = "technique " + std::to_string(i) + std::string(300, 't'),
                          .source = "@triton.jit\n" + std::string(4000, 'x') + "\n"});
    ASSERT_TRUE(sk::learn(*st, l));
  }
  auto library = sk::load(*st);
  ASSERT_TRUE(library);
  auto ranked = sk::retrieve(*library, sig, {.query = b.name});
  ASSERT_EQ(ranked.size(), 5u);
  const std::string section = sk::prompt_section(ranked, sk::kPromptBudgetChars);
  EXPECT_LE(section.size(), sk::kPromptBudgetChars);
  EXPECT_NE(section.find(ranked.front().skill.id), std::string::npos);
}

}  // namespace
