// The builtin generator's matrix products: KernelBench level 1's GEMM problems (1-18, fixtures at
// reduced sizes in tests/fixtures/generate/gemm_problems.tsv, and attention, 97) lowered and
// rendered on every backend; Triton sources parsed by Python, CUDA sources compiled by nvcc where
// they exist.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "generate/generate.hpp"
#include "generate/graph.hpp"
#include "generate/skills.hpp"
#include "support/generate_fixtures.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ok::generate::Proposal;
using ok::testing::fixture;
using ok::testing::forward_of;
using ok::testing::kSkills;
using ok::testing::must;
using ok::testing::run;

// The product that computes the output (a tril/triu replaces the product it reads).
const ok::generate::Node& only_gemm(const ok::generate::Graph& g) {
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it)
    if (it->kind == ok::generate::NodeKind::kGemm) return *it;
  throw std::runtime_error("no gemm node");
}

ok::generate::Graph lowered(const std::string& name) {
  auto skills = ok::generate::load_skills(kSkills);
  EXPECT_TRUE(skills.has_value());
  auto l = ok::generate::lower(fixture(name), *skills);
  EXPECT_TRUE(l.has_value());
  EXPECT_EQ(l->unsupported, "") << name;
  return l->graph;
}

TEST(GenerateGemm, EveryLevel1GemmProblemIsSupportedWithoutAVendorCall) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"gemm_square", "gemm"},     {"gemm_rect", "gemm"},       {"bmm", "gemm"},
      {"matvec", "reduce:matmul"}, {"scalar_mul", "pointwise"}, {"gemm_large_k", "gemm"},
      {"gemm_small_k", "gemm"},    {"gemm_irregular", "gemm"},  {"gemm_tall_skinny", "gemm"},
      {"gemm_3d", "gemm"},         {"gemm_4d_einsum", "gemm"},  {"diag_scale", "pointwise"},
      {"gemm_symmetric", "gemm"},  {"gemm_triu", "gemm:triu"},  {"gemm_tril", "gemm:tril"},
      {"gemm_ta", "gemm"},         {"gemm_tb", "gemm"},         {"gemm_tab", "gemm"}};
  const std::regex vendor(R"(_ok_torch\.(matmul|mm|bmm|einsum|tril|triu)|\s@\s|F\.linear)");
  ok::testing::expect_supported_without_vendor(cases, vendor);
}

TEST(GenerateGemm, TransposesAndBatchesBecomeStrides) {
  const auto ta = only_gemm(lowered("gemm_ta")).gemm;
  EXPECT_TRUE(ta.trans_a);
  EXPECT_FALSE(ta.trans_b);
  EXPECT_EQ(ta.stride_am(), 1);
  EXPECT_EQ(ta.stride_ak(), 32);
  const auto tab = only_gemm(lowered("gemm_tab")).gemm;
  EXPECT_TRUE(tab.trans_a && tab.trans_b);
  EXPECT_EQ(tab.stride_bn(), 48);
  const auto bmm = only_gemm(lowered("bmm")).gemm;
  EXPECT_EQ(bmm.batch, 3);
  EXPECT_TRUE(bmm.batch_a && bmm.batch_b);
  EXPECT_EQ(bmm.batch_stride_a(), 16 * 24);
  // (2, 16, 24) @ (24, 8): the batches of A fold into M; B is shared.
  const auto three = only_gemm(lowered("gemm_3d")).gemm;
  EXPECT_EQ(three.batch, 1);
  EXPECT_EQ(three.m, 32);
  // einsum("bijl,lk->bijk"): (2, 4, 8, 16) @ (16, 8) folds to [64 x 16] @ [16 x 8].
  const auto four = only_gemm(lowered("gemm_4d_einsum")).gemm;
  EXPECT_EQ(four.m, 64);
  EXPECT_EQ(four.k, 16);
  EXPECT_EQ(four.n, 8);
  const std::string cpu = must(fixture("gemm_ta"), "cpu").candidates.at(0).source;
  EXPECT_NE(cpu.find("SAM = 1, SAK = 32"), std::string::npos) << cpu;
}

TEST(GenerateGemm, TrianglesSkipTheTilesOutside) {
  const auto tril = only_gemm(lowered("gemm_tril")).gemm;
  EXPECT_EQ(tril.triangle, ok::generate::Triangle::kLower);
  const std::string cpu = must(fixture("gemm_tril"), "cpu").candidates.at(0).source;
  EXPECT_NE(cpu.find("if (j0 - (i0 + im - 1) > 0) {"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("(j0 + j - (i0 + i) <= 0) ? acc[i][j] : 0.0f"), std::string::npos);
  const std::string tr = must(fixture("gemm_triu"), "triton").candidates.at(0).source;
  EXPECT_NE(tr.find("k_tiles = tl.where(pid_n * BLOCK_N + BLOCK_N - 1 - (pid_m * BLOCK_M) < 0"),
            std::string::npos)
      << tr;
  const std::string cu = must(fixture("gemm_tril"), "cuda").candidates.at(0).source;
  EXPECT_NE(cu.find("return;"), std::string::npos);
}

TEST(GenerateGemm, StructuredProductsBecomeScalesAndReductions) {
  // diag(d) @ B: a row scale; A @ diag(d): a column scale; no product kernel.
  const json in = {{{"name", "d"}, {"index", 0}, {"shape", {8}}, {"dtype", "float32"}},
                   {{"name", "B"}, {"index", 1}, {"shape", {8, 5}}, {"dtype", "float32"}}};
  json ir = {{"traceable", true},
             {"inputs", in},
             {"attrs", json::array()},
             {"nodes",
              {{{"name", "diag"},
                {"op", "diag"},
                {"args", {{{"input", "d"}}}},
                {"kwargs", {{"diagonal", 0}}},
                {"shape", {8, 8}},
                {"dtype", "float32"}},
               {{"name", "mm"},
                {"op", "matmul"},
                {"args", {{{"node", "diag"}}, {{"input", "B"}}}},
                {"kwargs", json::object()},
                {"shape", {8, 5}},
                {"dtype", "float32"}}}},
             {"outputs", {{{"node", "mm"}}}}};
  Proposal p = must(ir, "cpu");
  ASSERT_TRUE(p.supported) << p.reason;
  EXPECT_EQ(p.pattern, "pointwise");
  // A diag read by anything but a product is named.
  ir["nodes"][1]["op"] = "relu";
  ir["nodes"][1]["args"] = {{{"node", "diag"}}};
  ir["nodes"][1]["shape"] = {8, 8};
  Proposal q = must(ir, "cpu");
  EXPECT_FALSE(q.supported);
  EXPECT_NE(q.reason.find("only as an operand of a matrix product"), std::string::npos) << q.reason;
  // Matrix-vector: a multiply fused into a row sum.
  const std::string mv = must(fixture("matvec"), "cpu").candidates.at(0).source;
  EXPECT_NE(mv.find("reduction(+:"), std::string::npos) << mv;
}

TEST(GenerateGemm, ScalarArgumentsAreConstantsOfTheSignature) {
  const std::string src = must(fixture("scalar_mul"), "cpu").candidates.at(0).source;
  EXPECT_NE(src.find("def forward(self, A, s):"), std::string::npos) << src;
  EXPECT_NE(src.find("if s != 3.14:"), std::string::npos);
  EXPECT_NE(src.find("3.14"), std::string::npos);
}

TEST(GenerateGemm, ParameterSpacesHaveAtLeastTwentyPointsInPriorOrder) {
  for (const char* backend : {"cpu", "triton", "cuda"}) {
    Proposal p = must(fixture("gemm_square"), backend, 0, 0);
    EXPECT_GE(p.candidates.size(), 20u) << backend;
    std::set<std::string> distinct;
    for (const auto& c : p.candidates) distinct.insert(c.params.dump());
    EXPECT_EQ(distinct.size(), p.candidates.size()) << backend;
  }
  // Large K over few tiles: split-K comes first on Triton.
  Proposal k = must(fixture("gemm_large_k"), "triton");
  EXPECT_GT(k.candidates.at(0).params["triton-gemm"]["SPLIT_K"].get<int>(), 1);
  EXPECT_NE(k.candidates.at(0).source.find("_ok_torch.zeros("), std::string::npos);
  EXPECT_NE(k.candidates.at(0).source.find("tl.atomic_add"), std::string::npos);
}

// Rows that are not 16-byte aligned (level 1's problem 8: K = 2949, N = 5921; here 4099 x 1031
// x 4097) are copied into zeroed, aligned buffers whose K is a whole number of K steps; the kernel
// reads the buffers' strides, wraps its tile offsets at the padded contiguous extent (4097 -> 4112)
// and runs its K loop unmasked. A transposed B is copied into [K, N]; an aligned A only when K
// grows.
TEST(GenerateGemm, MisalignedRowsAndTransposedBArePaddedOnTriton) {
  auto param = [](const ok::generate::GeneratedCandidate& c, const char* k) {
    return c.params.at("triton-gemm").at(k).get<int64_t>();
  };
  auto padded_k = [&](const ok::generate::GeneratedCandidate& c, int64_t k) {
    const int64_t step = param(c, "BLOCK_K") * param(c, "SPLIT_K");
    return (k + step - 1) / step * step;
  };
  Proposal odd = must(fixture("gemm_irregular_padded"), "triton", 0, 0);
  ASSERT_TRUE(odd.supported) << odd.reason;
  const auto& first = odd.candidates.at(0);
  ASSERT_EQ(param(first, "PAD"), 1) << "the copies cost little against this product: first";
  const int64_t kp = padded_k(first, 1031);
  const std::string fwd = forward_of(first.source);
  EXPECT_NE(fwd.find(fmt::format("_ok_pa_0 = _ok_torch.zeros((4099, {}), device=A.device", kp)),
            std::string::npos)
      << fwd;
  EXPECT_NE(fwd.find("_ok_pa_0[..., :4099, :1031].copy_(A.reshape(4099, 1031))"),
            std::string::npos);
  EXPECT_NE(fwd.find(fmt::format("_ok_pb_0 = _ok_torch.zeros(({}, 4112)", kp)), std::string::npos);
  EXPECT_NE(fwd.find("_ok_pb_0[..., :1031, :4097].copy_(B.reshape(1031, 4097))"),
            std::string::npos);
  EXPECT_NE(fwd.find("](_ok_pa_0, _ok_pb_0, "), std::string::npos);
  EXPECT_NE(fwd.find("EVEN_K=True"), std::string::npos);
  EXPECT_NE(first.source.find(fmt::format("offs_am[:, None] * {} + offs_k[None, :] * 1", kp)),
            std::string::npos);
  EXPECT_NE(first.source.find("offs_k[:, None] * 4112 + offs_bn[None, :] * 1"), std::string::npos);
  EXPECT_NE(first.source.find("tl.arange(0, BLOCK_M)) % 4099"), std::string::npos);
  EXPECT_NE(first.source.find("tl.arange(0, BLOCK_N)) % 4112"), std::string::npos);
  bool unpadded = false;
  for (const auto& c : odd.candidates)
    if (param(c, "PAD") == 0) {
      unpadded = true;
      EXPECT_NE(c.source.find("tl.arange(0, BLOCK_N)) % 4097"), std::string::npos);
    }
  EXPECT_TRUE(unpadded) << "the unpadded kernel stays in the space";
  // Both transposed: A stored [K, M] becomes [Kp, 4112]; B stored [N, K] is transposed into
  // [Kp, 4112]. The product is node 2 (after the two transposes): _ok_pa_2 and _ok_pb_2.
  const Proposal tp = must(fixture("gemm_tab_padded"), "triton", 0, 1);
  const auto& tab = tp.candidates.at(0);
  ASSERT_EQ(param(tab, "PAD"), 1);
  const int64_t tkp = padded_k(tab, 1031);
  EXPECT_NE(tab.source.find(fmt::format("_ok_pa_2 = _ok_torch.zeros(({}, 4112)", tkp)),
            std::string::npos)
      << tab.source;
  EXPECT_NE(tab.source.find("_ok_pa_2[..., :1031, :4099].copy_(A.reshape(1031, 4099))"),
            std::string::npos);
  EXPECT_NE(tab.source.find(fmt::format("_ok_pb_2 = _ok_torch.zeros(({}, 4112)", tkp)),
            std::string::npos);
  EXPECT_NE(
      tab.source.find("_ok_pb_2[..., :1031, :4097].copy_(B.reshape(4097, 1031).transpose(-1, -2))"),
      std::string::npos);
  EXPECT_NE(tab.source.find("offs_am[:, None] * 1 + offs_k[None, :] * 4112"), std::string::npos);
  EXPECT_NE(tab.source.find("offs_k[:, None] * 4112 + offs_bn[None, :] * 1"), std::string::npos);
  EXPECT_NE(tab.source.find("tl.arange(0, BLOCK_M)) % 4112"), std::string::npos);
  EXPECT_NE(tab.source.find("tl.arange(0, BLOCK_N)) % 4112"), std::string::npos);
}

// Where the copies would cost more than they save PAD comes late: an aligned transposed B (32 x 48
// by 40 x 48), small misaligned products, attention's batched Q K^T; aligned products never copy.
TEST(GenerateGemm, PaddingComesLateWhereItDoesNotPay) {
  auto param = [](const ok::generate::GeneratedCandidate& c, const char* k) {
    return c.params.at("triton-gemm").at(k).get<int64_t>();
  };
  // An aligned transposed B (32 x 48 by 40 x 48): PAD admissible but not first at this size; at
  // BLOCK_K 16, K = 48 does not grow and A is read where it is.
  Proposal tb = must(fixture("gemm_tb"), "triton", 0, 0);
  EXPECT_EQ(param(tb.candidates.at(0), "PAD"), 0);
  bool seen = false;
  for (const auto& c : tb.candidates) {
    if (param(c, "PAD") != 1 || param(c, "BLOCK_K") != 16 || param(c, "SPLIT_K") != 1) continue;
    seen = true;
    EXPECT_EQ(c.source.find("_ok_pa_"), std::string::npos);
    EXPECT_NE(c.source.find(".copy_(B.reshape(40, 48).transpose(-1, -2))"), std::string::npos)
        << c.source;
    EXPECT_NE(c.source.find("offs_k[:, None] * 48 + offs_bn[None, :] * 1"), std::string::npos);
    break;
  }
  EXPECT_TRUE(seen);
  // Small products keep the copies for later; aligned ones never get them, and K a whole number
  // of steps (64 here) loads unmasked.
  Proposal small = must(fixture("gemm_irregular"), "triton", 0, 0);
  EXPECT_EQ(param(small.candidates.at(0), "PAD"), 0);
  EXPECT_NE(small.candidates.at(0).source.find("EVEN_K=False"), std::string::npos);
  // Attention's first product, Q [6, 16, 8] by K^T: K, stored [6, 16, 8], is transposed per batch
  // into [6, 16, 16] (K = 8 rounded up to a 16-wide step, N = 16).
  bool batched = false;
  for (const auto& c : must(fixture("attention"), "triton", 0, 0).candidates) {
    if (param(c, "PAD") != 1 || param(c, "BLOCK_K") != 16 || param(c, "SPLIT_K") != 1) continue;
    batched = true;
    EXPECT_NE(c.source.find("_ok_torch.zeros((6, 16, 16), device=K.device"), std::string::npos)
        << c.source;
    EXPECT_NE(c.source.find("[..., :8, :16].copy_(K.reshape(6, 16, 8).transpose(-1, -2))"),
              std::string::npos);
    break;
  }
  EXPECT_TRUE(batched);
  for (const auto& c : must(fixture("gemm_square"), "triton", 0, 0).candidates) {
    EXPECT_EQ(param(c, "PAD"), 0);
    EXPECT_EQ(c.source.find("_ok_pa_"), std::string::npos);
    const bool whole = 64 % (param(c, "BLOCK_K") * param(c, "SPLIT_K")) == 0;
    EXPECT_NE(c.source.find(whole ? "EVEN_K=True" : "EVEN_K=False"), std::string::npos);
  }
}

// Level 1's problem 97 as analyze writes F.scaled_dot_product_attention (docs/graph-ir.md,
// "Attention"): Q [2, 3, 16, 8] times K transposed, scaled, a row softmax, times V.
TEST(GenerateGemm, LinearsTheLoweringCannotGenerateSayWhy) {
  // x [4, 8]; an nn.Linear module (op "module") or F.linear, weight [5, w_in], bias [bias].
  auto linear = [](bool module, int w_in, int bias, bool weight_attr = true) {
    json attrs = json::array();
    const std::string pre = module ? "fc." : "";
    if (weight_attr)
      attrs.push_back({{"name", pre + "weight"},
                       {"shape", {5, w_in}},
                       {"dtype", "float32"},
                       {"kind", "parameter"}});
    attrs.push_back(
        {{"name", pre + "bias"}, {"shape", {bias}}, {"dtype", "float32"}, {"kind", "parameter"}});
    json args = json::array({{{"input", "x"}}});
    if (!module) {
      args.push_back({{"attr", "weight"}});
      args.push_back({{"attr", "bias"}});
    }
    return json{
        {"traceable", true},
        {"reason", nullptr},
        {"inputs", {{{"name", "x"}, {"index", 0}, {"shape", {4, 8}}, {"dtype", "float32"}}}},
        {"attrs", attrs},
        {"nodes",
         {{{"name", "y"},
           {"op", module ? "module" : "linear"},
           {"args", args},
           {"kwargs", module ? json{{"target", "fc"}, {"type", "Linear"}} : json::object()},
           {"shape", {4, 5}},
           {"dtype", "float32"}}}},
        {"outputs", {{{"node", "y"}}}},
        {"module_types", module ? json{{"fc", "Linear"}} : json::object()}};
  };
  auto reason = [](const json& ir) {
    Proposal p = must(ir, "cpu");
    EXPECT_FALSE(p.supported);
    return p.reason;
  };
  for (bool module : {true, false}) {
    EXPECT_TRUE(must(linear(module, 8, 5), "cpu").supported) << module;
    EXPECT_NE(reason(linear(module, 7, 5)).find("node y: linear of (4, 8) by a weight (5, 7)"),
              std::string::npos)
        << module;
    EXPECT_NE(reason(linear(module, 8, 4)).find("node y: linear bias of shape (4,) for 5 outputs"),
              std::string::npos)
        << module;
  }
  // A module whose weight is not among the attrs (a hand-written IR) stays the PyTorch call.
  EXPECT_EQ(must(linear(true, 8, 5, false), "cpu").pattern, "vendor");
}

TEST(GenerateGemm, AttentionIsTwoProductsAroundOneRowKernel) {
  const ok::generate::Graph g = lowered("attention");
  std::vector<ok::generate::Gemm> gemms;
  for (const auto& n : g.nodes)
    if (n.kind == ok::generate::NodeKind::kGemm) gemms.push_back(n.gemm);
  ASSERT_EQ(gemms.size(), 2u);
  EXPECT_TRUE(gemms[0].trans_b) << "K is read through its strides, not copied";
  EXPECT_EQ(gemms[0].batch, 6);
  EXPECT_EQ(gemms[0].k, 8);
  EXPECT_EQ(gemms[0].n, 16);
  EXPECT_FALSE(gemms[1].trans_a || gemms[1].trans_b);
  EXPECT_EQ(gemms[1].k, 16);
  const std::regex vendor(R"(_ok_torch\.(matmul|bmm|softmax)|scaled_dot_product|\s@\s)");
  for (const char* backend : {"cpu", "triton", "cuda"}) {
    Proposal p = must(fixture("attention"), backend);
    ASSERT_TRUE(p.supported) << backend << ": " << p.reason;
    // The softmax's rows (16 wide) fit one program: the first product's row epilogue.
    EXPECT_EQ(p.pattern, "gemm:epilogue[row:softmax]+gemm") << backend;
    ASSERT_FALSE(p.candidates.empty());
    EXPECT_FALSE(std::regex_search(forward_of(p.candidates[0].source), vendor)) << backend;
  }
}

TEST(GenerateGemm, TritonSourcesParseAsPython) {
  if (run("/usr/bin/python3 -c pass >/dev/null 2>&1") != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const fs::path dir = fs::temp_directory_path() / ("ok_gemm_ast_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* name :
       {"gemm_tril", "gemm_large_k", "gemm_tab", "bmm", "attention", "gemm_tab_padded"}) {
    const fs::path file = dir / (std::string(name) + ".py");
    std::ofstream(file) << must(fixture(name), "triton", 0, 1).candidates.at(0).source;
    EXPECT_EQ(run("/usr/bin/python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' " +
                  file.string()),
              0)
        << name;
  }
  fs::remove_all(dir);
}

TEST(GenerateGemm, CudaSourcesCompileWithNvcc) {
  if (run("nvcc --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no nvcc on PATH";
  const fs::path dir = fs::temp_directory_path() / ("ok_gemm_nvcc_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* name : {"gemm_tril", "attention"})
    EXPECT_EQ(ok::testing::nvcc_compile(must(fixture(name), "cuda", 0, 1).candidates.at(0).source,
                                        dir / name),
              0)
        << name;
  fs::remove_all(dir);
}

}  // namespace
