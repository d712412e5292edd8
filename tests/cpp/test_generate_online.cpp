// Online softmax (plan.hpp, KernelGroup::online): a row sum of exp(Y - T), T the row's max M of
// the same Y or logsumexp's shift select(|M| < inf, M, 0), is taken in M's pass against a running
// max by the kernels that read the row once per pass (Triton's loop mode, CUDA's rows), one read
// of the row fewer. The CUDA kernels run against PyTorch in
// tests/integration/test_builtin_online_softmax.py (the CPU model of CUDA's execution).
#include <gtest/gtest.h>

#include <regex>

#include "generate/generate.hpp"
#include "generate/plan.hpp"
#include "generate/skills.hpp"
#include "support/generate_fixtures.hpp"

namespace {

using nlohmann::json;
using ok::testing::fixture;
using ok::testing::lowered;
using ok::testing::must;
using ok::testing::node;
using ok::testing::single_node;

// The online pairs of the plan's row groups: (sum, max, shift), the shift -1 where it is the max.
std::vector<std::tuple<int, int, int>> pairs(const json& ir) {
  auto skills = ok::generate::load_skills(ok::testing::kSkills);
  EXPECT_TRUE(skills.has_value());
  std::vector<std::tuple<int, int, int>> out;
  if (!skills) return out;
  const ok::generate::Graph g = lowered(ir);
  for (const auto& G : ok::generate::make_plan(g, *skills, "triton").plan.groups)
    for (const auto& [sum, on] : G.online)
      out.emplace_back(sum, on.max, on.shift == on.max ? -1 : on.shift);
  return out;
}

size_t count(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<size_t>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// The first candidate of the backend whose parameters say `mode` (Triton) or any (CUDA).
std::string candidate(const json& ir, const std::string& backend, const std::string& mode = "") {
  for (const auto& c : must(ir, backend, 0, 0).candidates)
    if (mode.empty() || c.params.dump().find("\"mode\":\"" + mode + "\"") != std::string::npos)
      return c.source;
  ADD_FAILURE() << "no " << backend << " candidate in mode " << mode;
  return "";
}

const json kLogsumexp =
    single_node("logsumexp", {{"dim", json::array({1})}, {"keepdim", false}}, {8, 5000}, {8});

TEST(GenerateOnline, PairsTheSumOfExpWithTheMaxOfTheSameRows) {
  for (const char* name : {"softmax", "log_softmax"}) {
    const auto p = pairs(fixture(name));
    ASSERT_EQ(p.size(), 1u) << name;
    EXPECT_EQ(std::get<2>(p[0]), -1) << name << ": shifted by the max itself";
  }
  // cross_entropy: the logsumexp of the logits as log(sum(exp(x - max))) + max.
  json ce = single_node("cross_entropy", {{"reduction", "mean"}}, {8, 512}, json::array());
  ce["inputs"].push_back({{"name", "t"}, {"index", 1}, {"shape", {8}}, {"dtype", "int64"}});
  ce["nodes"][0]["args"].push_back({{"input", "t"}});
  const auto ce_pairs = pairs(ce);
  ASSERT_EQ(ce_pairs.size(), 1u);
  EXPECT_EQ(std::get<2>(ce_pairs[0]), -1);
  const auto lse = pairs(kLogsumexp);
  ASSERT_EQ(lse.size(), 1u);
  EXPECT_GE(std::get<2>(lse[0]), 0) << "logsumexp's shift is select(|M| < inf, M, 0)";
  // No exp of a shifted row: nothing to pair.
  for (const char* name : {"rmsnorm", "layernorm", "sum", "max"})
    EXPECT_TRUE(pairs(fixture(name)).empty()) << name;
  // A sum of exp(x - max(x)) over other rows than the max's is no pair: the max over dim 0, the
  // sum over dim 1 (two row groups).
  json ir = single_node("amax", {{"dim", json::array({0})}, {"keepdim", true}}, {64, 48}, {1, 48});
  ir["nodes"].push_back(
      node("d", "sub", json::array({{{"input", "x"}}, {{"node", "y"}}}), {64, 48}));
  ir["nodes"].push_back(node("e", "exp", json::array({{{"node", "d"}}}), {64, 48}));
  ir["nodes"].push_back(node("s", "sum", json::array({{{"node", "e"}}}), {64},
                             {{"dim", json::array({1})}, {"keepdim", false}}));
  ir["outputs"] = json::array({{{"node", "s"}}});
  EXPECT_TRUE(pairs(ir).empty());
}

TEST(GenerateOnline, TritonLoopsReadTheRowOnceForMaxAndSum) {
  // softmax: max and sum in one loop, then the write loop (two before: max, sum, write).
  const std::string loop = candidate(fixture("softmax"), "triton", "loop");
  EXPECT_EQ(count(loop, R"(for start in range\()"), 2u) << loop;
  EXPECT_NE(loop.find("tl.exp(a"), std::string::npos) << "the running sum is rescaled";
  // The tile mode holds the row in registers: unchanged.
  const std::string tile = candidate(fixture("softmax"), "triton", "tile");
  EXPECT_EQ(count(tile, R"(for start in range\()"), 0u);
  // logsumexp: one loop, and the sum rescaled by exp(M - T) after it.
  const std::string lse = candidate(kLogsumexp, "triton", "loop");
  EXPECT_EQ(count(lse, R"(for start in range\()"), 1u) << lse;
  EXPECT_EQ(count(lse, R"(\* tl\.exp\(p\d+ - p\d+\))"), 1u) << lse;
  ok::testing::expect_triton_parses({{"softmax", ""}, {"log_softmax", ""}}, "online");
}

TEST(GenerateOnline, CudaRowsTakeTheSumInTheMaxsPass) {
  const std::string cu = ok::testing::cuda_source(candidate(fixture("softmax"), "cuda"));
  // One pass with the running max and sum (two block reductions), then the write pass.
  EXPECT_EQ(count(cu, R"(n\d+ = fmaxf\(a\d+, y\d+\))"), 2u) << "float4 and scalar kernels";
  EXPECT_EQ(count(cu, R"(rq < \d+; rq \+= TR)"), 4u) << "two loops a kernel (three before): " << cu;
  EXPECT_NE(cu.find("if (isinf(p"), std::string::npos) << "an infinite max poisons the sum";
  const std::string lse = ok::testing::cuda_source(candidate(kLogsumexp, "cuda"));
  EXPECT_NE(lse.find("*= expf(p"), std::string::npos) << lse;
  ok::testing::expect_cuda_compiles({{"softmax", ""}, {"log_softmax", ""}}, "online");
}

}  // namespace
