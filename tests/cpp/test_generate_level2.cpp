// Level 2's logsumexp, clone/detach, dropout (eval) and adaptive average pooling: the KernelBench
// problems of tests/fixtures/generate/level2_more_problems.tsv (the worker's analyze at reduced
// sizes) supported on every backend with no PyTorch call kept; logsumexp as a max-shifted row
// reduction (PyTorch's guard of an infinite max included); adaptive pooling as a mean or max over
// the pooled dims, a plain pooling where the windows are even, refused where they are not; an
// eval BatchNorm's per-channel rsqrt computed inline in the product's epilogue (and planned again
// without inlining where a value computed inline is also read outside its group, through a view
// too, or would be read at two shapes);
// Triton sources parsed by Python, CUDA sources compiled by nvcc where they exist.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>

#include "generate/generate.hpp"
#include "generate/graph.hpp"
#include "generate/plan.hpp"
#include "generate/skills.hpp"
#include "support/generate_fixtures.hpp"

namespace {

using nlohmann::json;
using ok::generate::Graph;
using ok::generate::Node;
using ok::generate::NodeKind;
using ok::generate::ReduceKind;
using ok::testing::fixture;
using ok::testing::kRoot;
using ok::testing::kSkills;
using ok::testing::lowered;
using ok::testing::must;

// {fixture, plan pattern} of every row of level2_more_problems.tsv. Reductions over extents of 1
// (18's chain after its row sum) are views, so one row group follows the GEMM, in its epilogue
// (a row epilogue: the rows fit one program); the clones are their
// input, so 40's and 20's tails still fuse into the product.
const std::vector<std::pair<std::string, std::string>> kCases = {
    {"l2_18_gemm_reductions_lse", "gemm:epilogue[reduce:sum,amax,mean,logsumexp]"},
    {"l2_22_gemm_clamp_lse_mish", "gemm:epilogue[reduce:logsumexp]"},
    {"l2_45_gemm_sigmoid_gemm_lse", "gemm:epilogue+gemm:epilogue[reduce:logsumexp]"},
    {"l2_58_convt3d_lse_hardswish", "conv:transposed+reduce:logsumexp"},
    {"l2_40_gemm_clone_residual", "gemm:epilogue"},
    {"l2_20_convt3d_clone_residual", "conv:transposed:epilogue"},
    {"l2_66_gemm_dropout_softmax", "gemm:epilogue[row:softmax]"},
    {"l2_67_conv_gelu_adaptive_avg", "conv+reduce:adaptive_avg_pool"},
    {"l2_33_gemm_scale_bn", "gemm:epilogue"},
    {"l2_77_convt3d_bn_adaptive_avg", "conv:transposed:epilogue+reduce:adaptive_avg_pool"},
};

const std::regex kVendor(R"(self\.\w+\(|_ok_attr\(self, "[^"]*"\)\(|_ok_torch\.(nn|matmul|mm|)"
                         R"(logsumexp|clone|detach|dropout|adaptive))");

TEST(GenerateLevel2, EveryListedProblemIsSupportedWithoutAPyTorchCall) {
  // Every row of the table has a case here.
  std::ifstream in(kRoot / "tests" / "fixtures" / "generate" / "level2_more_problems.tsv");
  size_t rows = 0;
  for (std::string line; std::getline(in, line);) rows += !line.empty() && line[0] != '#';
  EXPECT_EQ(rows, kCases.size());
  ok::testing::expect_supported_without_vendor(kCases, kVendor, 4);
}

TEST(GenerateLevel2, LogsumexpIsAMaxShiftedSumOverItsDims) {
  // Over the middle dim of [2, 5, 3] without keepdim: reductions keep the dim, a view drops it.
  const Graph g = lowered(
      ok::testing::single_node("logsumexp", {{"dim", {1}}, {"keepdim", false}}, {2, 5, 3}, {2, 3}));
  std::vector<ReduceKind> reductions;
  bool guard = false;
  for (const Node& n : g.nodes) {
    if (n.kind == NodeKind::kReduce) {
      reductions.push_back(n.reduce);
      EXPECT_EQ(n.dims, std::vector<int>{1});
      EXPECT_EQ(g.values[n.out].shape, (ok::generate::Shape{2, 1, 3}));
    }
    guard |= n.kind == NodeKind::kElementwise && n.op == "select";  // 0 for an infinite max
  }
  EXPECT_EQ(reductions, (std::vector<ReduceKind>{ReduceKind::kMax, ReduceKind::kSum}));
  EXPECT_TRUE(guard);
  const Node& out = g.nodes.at(g.values.at(g.output).producer);
  EXPECT_EQ(out.kind, NodeKind::kView);
  EXPECT_EQ(g.values[g.output].shape, (ok::generate::Shape{2, 3}));
  // keepdim: the add of the log and the shift is the output.
  const Graph k = lowered(ok::testing::single_node("logsumexp", {{"dim", {1}}, {"keepdim", true}},
                                                   {2, 5, 3}, {2, 1, 3}));
  EXPECT_EQ(k.nodes.at(k.values.at(k.output).producer).op, "add");
}

TEST(GenerateLevel2, AdaptivePoolingIsAMeanAPoolingOrRefused) {
  // To 1 x 1: a sum over the two pooled dims times 1 / 20, no window kernel.
  const Graph global = lowered(ok::testing::single_node(
      "adaptive_avg_pool", {{"output_size", {1, 1}}}, {2, 3, 4, 5}, {2, 3, 1, 1}));
  ASSERT_EQ(global.nodes.size(), 2u);
  EXPECT_EQ(global.nodes[0].kind, NodeKind::kReduce);
  EXPECT_EQ(global.nodes[0].dims, (std::vector<int>{2, 3}));
  EXPECT_EQ(global.nodes[1].op, "mul");
  EXPECT_DOUBLE_EQ(global.nodes[1].args[1].scalar, 1.0 / 20);
  const Graph max = lowered(
      ok::testing::single_node("adaptive_max_pool", {{"output_size", {1}}}, {2, 3, 7}, {2, 3, 1}));
  ASSERT_EQ(max.nodes.size(), 1u);
  EXPECT_EQ(max.nodes[0].reduce, ReduceKind::kMax);
  // Even windows: the plain pooling, kernel = stride = input / output.
  const Graph even = lowered(ok::testing::single_node(
      "adaptive_avg_pool", {{"output_size", {2, 1, 5}}}, {2, 4, 6, 10}, {2, 2, 1, 5}));
  ASSERT_EQ(even.nodes.size(), 1u);
  const auto& w = even.nodes[0].window;
  EXPECT_EQ(even.nodes[0].op, "avg_pool");
  EXPECT_EQ(std::vector<int64_t>(w.kernel, w.kernel + 3), (std::vector<int64_t>{2, 6, 2}));
  EXPECT_EQ(std::vector<int64_t>(w.stride, w.stride + 3), (std::vector<int64_t>{2, 6, 2}));
  EXPECT_EQ(std::vector<int64_t>(w.out, w.out + 3), (std::vector<int64_t>{2, 1, 5}));
  // Uneven windows (7 to 3: PyTorch's windows of 3, 3 and 3 elements overlapping) are refused.
  auto skills = ok::generate::load_skills(kSkills);
  auto r = ok::generate::lower(
      ok::testing::single_node("adaptive_avg_pool", {{"output_size", {3}}}, {2, 3, 7}, {2, 3, 3}),
      *skills);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->unsupported.find("windows of uneven sizes"), std::string::npos) << r->unsupported;
}

ok::generate::Plan planned(const json& ir) {
  auto skills = ok::generate::load_skills(kSkills);
  EXPECT_TRUE(skills.has_value());
  auto p = ok::generate::make_plan(lowered(ir), *skills);
  EXPECT_EQ(p.unsupported, "");
  return p.plan;
}

TEST(GenerateLevel2, PerChannelValuesAreComputedInlineInTheEpilogue) {
  // 77: the eval-mode BatchNorm's rsqrt(running_var + eps), [C, 1, 1, 1], is computed per element
  // in the transposed convolution's epilogue, at the shape of the value it scales.
  const ok::generate::Plan plan = planned(fixture("l2_77_convt3d_bn_adaptive_avg"));
  auto conv = std::find_if(plan.steps.begin(), plan.steps.end(),
                           [](const auto& s) { return s.kind == ok::generate::StepKind::kConv; });
  ASSERT_NE(conv, plan.steps.end());
  ASSERT_GE(conv->epilogue, 0);
  const auto& G = plan.groups.at(static_cast<size_t>(conv->epilogue));
  EXPECT_EQ(G.broadcast.size(), 2u);  // running_var + eps, and its rsqrt
  for (const auto& [v, ctx] : G.broadcast) EXPECT_EQ(ctx, (ok::generate::Shape{2, 4, 5, 6, 7}));
  // exp(v) of [8] read inline by relu(x) * e and again after the row sum: it must be stored, so
  // the plan is made again without inlining (exp a kernel of its own).
  const ok::generate::Plan escape = planned(fixture("broadcast_escape"));
  size_t kernels = 0;
  for (const auto& step : escape.steps) kernels += step.kind == ok::generate::StepKind::kKernel;
  EXPECT_EQ(kernels, 3u);
  for (const auto& g : escape.groups) EXPECT_TRUE(g.broadcast.empty());
}

ok::generate::Shape strip_ones(ok::generate::Shape s) {
  while (!s.empty() && s.front() == 1) s.erase(s.begin());
  return s;
}

// Every kernel group reads only values it computes or lists as leaves (so it has a leaf); a value
// computed inline (KernelGroup::broadcast) has one shape, that of every full-size reader in its
// group (up to leading ones) and of every inline value that reads it.
void expect_groups_consistent(const Graph& g, const ok::generate::Plan& plan) {
  for (const auto& G : plan.groups) {
    EXPECT_FALSE(G.leaves.empty());
    for (int ni : G.nodes) {
      const Node& n = g.nodes[ni];
      for (const auto& a : n.args) {
        if (a.is_scalar()) continue;
        const bool inside =
            std::find(G.nodes.begin(), G.nodes.end(), g.values[a.value].producer) != G.nodes.end();
        const bool leaf = std::find(G.leaves.begin(), G.leaves.end(), a.value) != G.leaves.end();
        EXPECT_TRUE(inside != leaf) << g.values[n.out].name << " reads " << g.values[a.value].name;
        if (!G.broadcast.contains(a.value)) continue;
        const auto reader = G.broadcast.find(n.out);
        const ok::generate::Shape ctx =
            reader == G.broadcast.end() ? g.values[n.out].shape : reader->second;
        EXPECT_EQ(strip_ones(G.broadcast.at(a.value)), strip_ones(ctx))
            << g.values[a.value].name << " read inline by " << g.values[n.out].name;
      }
    }
  }
}

TEST(GenerateLevel2, AViewOfAnInlineValueIsReadOutsideItsGroup) {
  // relu(x) * sigmoid(b).view(3, 1, 1) * rsqrt(b.abs().view(3, 1, 1) + 1e-5): the view of a value
  // computed inline is a view step of its own, reading the value outside its group, so the plan is
  // made again without inlining (not a group that takes the value for its own with no leaf).
  const json ir = fixture("broadcast_view");
  const ok::generate::Plan plan = planned(ir);
  expect_groups_consistent(lowered(ir), plan);
  for (const auto& G : plan.groups) EXPECT_TRUE(G.broadcast.empty());
  for (const char* backend : {"cpu", "triton", "cuda"})
    EXPECT_TRUE(must(ir, backend, 0, 1).supported) << backend;
}

TEST(GenerateLevel2, AnInlineValueHasOneShapeForAllItsReaders) {
  // s = sigmoid(b) of [3, 1] is read inline by relu(x) * s at [2, 3, 4], and through t = s * 2 by
  // y.reshape(8, 3, 1) * t at [8, 3, 1]: s cannot be indexed at both, so that reader is no part
  // of the group and t is read outside it (the plan made again without inlining).
  const json ir = fixture("broadcast_nested");
  const ok::generate::Plan plan = planned(ir);
  expect_groups_consistent(lowered(ir), plan);
  // Where shapes agree the values stay inline (77: running_var + eps and its rsqrt).
  const json bn = fixture("l2_77_convt3d_bn_adaptive_avg");
  expect_groups_consistent(lowered(bn), planned(bn));
}

TEST(GenerateLevel2, TritonSourcesParseAsPython) {
  ok::testing::expect_triton_parses(kCases, "l2more");
}

TEST(GenerateLevel2, CudaSourcesCompileWithNvcc) {
  ok::testing::expect_cuda_compiles(kCases, "l2more");
}

}  // namespace
