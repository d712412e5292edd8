// The builtin generator's window family: KernelBench level 1's pooling, argmax/argmin and scan
// problems (41-46, 51, 52, 89-93; fixtures at reduced sizes in
// tests/fixtures/generate/window_problems.tsv) lowered and rendered on every backend; pooling
// shapes and parameters as PyTorch computes them; the scans absorbed from flips, cat and masks;
// Triton sources parsed by Python, CUDA sources compiled by nvcc where they exist.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>

#include "generate/generate.hpp"
#include "generate/graph.hpp"
#include "generate/skills.hpp"
#include "support/generate_fixtures.hpp"

namespace {

using nlohmann::json;
using ok::generate::Graph;
using ok::generate::Node;
using ok::generate::NodeKind;
using ok::generate::Proposal;
using ok::testing::fixture;
using ok::testing::forward_of;
using ok::testing::kSkills;
using ok::testing::lowered;
using ok::testing::must;

const std::vector<std::pair<std::string, std::string>> kCases = {
    {"max_pool_1d", "pool:max"},
    {"max_pool_2d", "pool:max"},
    {"max_pool_3d", "pool:max"},
    {"avg_pool_1d", "pool:avg"},
    {"avg_pool_2d", "pool:avg"},
    {"avg_pool_3d", "pool:avg"},
    {"argmax", "argmax"},
    {"argmin", "argmin"},
    {"cumsum", "scan:sum"},
    {"cumprod", "scan:prod"},
    {"cumsum_reverse", "scan:sum,reverse"},
    {"cumsum_exclusive", "scan:sum,exclusive"},
    {"masked_cumsum", "scan:sum,masked"}};

// The node computing the graph's output.
const Node& output_node(const Graph& g) {
  return g.nodes.at(g.values.at(g.output).producer);
}

TEST(GenerateWindow, EveryLevel1WindowProblemIsSupportedWithoutAVendorCall) {
  const std::regex vendor(R"(_ok_torch\.(cumsum|cumprod|argmax|argmin|max|min|flip|cat)\(|)"
                          R"(functional|self\.(maxpool|avg_pool)\()");
  ok::testing::expect_supported_without_vendor(kCases, vendor, 4);
}

TEST(GenerateWindow, PoolingTakesPyTorchsShapesAndParameters) {
  // 43: kernel 3, stride 2, padding 1, dilation 3 over 12 x 13 x 11.
  const auto w = output_node(lowered(fixture("max_pool_3d"))).window;
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.outer, 6);
  EXPECT_EQ(std::vector<int64_t>(w.out, w.out + 3), (std::vector<int64_t>{4, 5, 4}));
  EXPECT_EQ(w.dilation[0], 3);
  // 41: one pooled dim; the leading ones are unit windows.
  const auto w1 = output_node(lowered(fixture("max_pool_1d"))).window;
  EXPECT_EQ(w1.rank, 1);
  EXPECT_EQ(w1.kernel[0], 1);
  EXPECT_EQ(w1.kernel[2], 8);
  EXPECT_EQ(w1.out[2], 37);
  // ceil_mode keeps a last window that starts inside the input (or its left padding).
  json ceil = ok::testing::single_node("max_pool",
                                       {{"kernel_size", {2}},
                                        {"stride", {2}},
                                        {"padding", {0}},
                                        {"dilation", {1}},
                                        {"ceil_mode", true}},
                                       {2, 7}, {2, 4});
  EXPECT_EQ(output_node(lowered(ceil)).window.out[2], 4);
  json avg = ok::testing::single_node("avg_pool",
                                      {{"kernel_size", {3, 3}},
                                       {"stride", {2, 2}},
                                       {"padding", {1, 1}},
                                       {"ceil_mode", false},
                                       {"count_include_pad", false},
                                       {"divisor_override", 5}},
                                      {1, 7, 7}, {1, 4, 4});
  const auto wa = output_node(lowered(avg)).window;
  EXPECT_FALSE(wa.count_include_pad);
  EXPECT_EQ(wa.divisor, 5);
  // A shape the IR states differently from PyTorch's formula is malformed.
  auto skills = ok::generate::load_skills(kSkills);
  ceil["nodes"][0]["shape"] = {2, 3};
  EXPECT_FALSE(ok::generate::lower(ceil, *skills).has_value());
  // Padding over half the window is refused, as PyTorch refuses it.
  json wide = ok::testing::single_node("max_pool", {{"kernel_size", {2}}, {"padding", {2}}}, {2, 7},
                                       {2, 6});
  auto r = ok::generate::lower(wide, *skills);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->unsupported.find("padding 2"), std::string::npos) << r->unsupported;
}

TEST(GenerateWindow, ScansAbsorbFlipsCatAndMasks) {
  const Graph rg = lowered(fixture("cumsum_reverse"));
  const Node& rev = output_node(rg);
  EXPECT_EQ(rev.op, "scan");
  EXPECT_TRUE(rev.window.reverse);
  EXPECT_EQ(rev.window.len, 3000);
  const Graph ex = lowered(fixture("cumsum_exclusive"));
  const Node& exn = output_node(ex);
  EXPECT_TRUE(exn.window.exclusive);
  EXPECT_EQ(exn.window.len, 3000);
  EXPECT_EQ(ex.values[exn.args[0].value].name, "x");  // the whole input, not its prefix
  const Graph masked = lowered(fixture("masked_cumsum"));
  const Node& mn = output_node(masked);
  EXPECT_TRUE(mn.window.masked);
  EXPECT_EQ(masked.values[mn.args[1].value].dtype, "bool");
  // Only the scan runs: the flips, narrow, cat and product are dropped.
  for (const char* name : {"cumsum_reverse", "cumsum_exclusive", "masked_cumsum"}) {
    Proposal p = must(fixture(name), "cpu", 0, 1);
    const std::string fwd = forward_of(p.candidates.at(0).source);
    EXPECT_EQ(fwd.find("_ok_lib."), fwd.rfind("_ok_lib.")) << fwd;  // one kernel launch
  }
}

TEST(GenerateWindow, WhatNoScanAbsorbsIsRefusedWithAReason) {
  auto flip = ok::testing::single_node("flip", {{"dims", {1}}}, {4, 8}, {4, 8});
  Proposal p = must(flip, "cpu");
  EXPECT_FALSE(p.supported);
  EXPECT_NE(p.reason.find("flip is generated only where a scan absorbs it"), std::string::npos)
      << p.reason;
  // A bool tensor read by a pointwise kernel.
  json ir = fixture("masked_cumsum");
  ir["outputs"] = json::array({{{"node", "mul"}}});
  p = must(ir, "cpu");
  EXPECT_FALSE(p.supported);
  EXPECT_NE(p.reason.find("reads the bool tensor mask"), std::string::npos) << p.reason;
}

TEST(GenerateWindow, ParameterSpacesDropWhatCannotApply) {
  // Triton's argmin over the middle dim (inner 20 > 1) searches BLOCK_J; the row scan does not.
  std::set<std::string> bj;
  for (const auto& c : must(fixture("argmin"), "triton", 0, 0).candidates)
    bj.insert(c.params["triton-window"]["BLOCK_J"].dump());
  EXPECT_GT(bj.size(), 1u);
  EXPECT_FALSE(bj.contains("1"));
  for (const auto& c : must(fixture("cumsum"), "triton", 0, 0).candidates)
    EXPECT_EQ(c.params["triton-window"]["BLOCK_J"], 1);
  EXPECT_GE(must(fixture("cumsum"), "triton", 0, 0).candidates.size(), 8u);
  EXPECT_GE(must(fixture("cumsum"), "cuda", 0, 0).candidates.size(), 8u);
  EXPECT_GE(must(fixture("cumsum"), "cpu", 0, 0).candidates.size(), 3u);
}

TEST(GenerateWindow, TritonSourcesParseAsPython) {
  ok::testing::expect_triton_parses(kCases, "window");
}

TEST(GenerateWindow, CudaSourcesCompileWithNvcc) {
  ok::testing::expect_cuda_compiles(kCases, "window");
}

}  // namespace
