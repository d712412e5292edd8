// The builtin generator's convolutions: KernelBench level 1's conv problems (50, 54-87, fixtures
// at reduced sizes in tests/fixtures/generate/conv_problems.tsv) lowered and rendered on every
// backend; Triton sources parsed by Python, CUDA sources compiled by nvcc where they exist.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "generate/generate.hpp"
#include "generate/graph.hpp"
#include "generate/skills.hpp"
#include "support/generate_fixtures.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ok::generate::Conv;
using ok::generate::Proposal;
using ok::testing::fixture;
using ok::testing::kRoot;
using ok::testing::kSkills;
using ok::testing::must;
using ok::testing::run;

// The fixture names of conv_problems.tsv, in order.
std::vector<std::string> conv_fixtures() {
  std::ifstream in(kRoot / "tests" / "fixtures" / "generate" / "conv_problems.tsv");
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') out.push_back(line.substr(0, line.find('\t')));
  return out;
}

ok::generate::Graph lowered(const json& ir) {
  auto skills = ok::generate::load_skills(kSkills);
  EXPECT_TRUE(skills.has_value());
  auto l = ok::generate::lower(ir, *skills);
  EXPECT_TRUE(l.has_value()) << (l ? "" : l.error().message);
  EXPECT_EQ(l ? l->unsupported : "", "");
  return l ? l->graph : ok::generate::Graph{};
}

std::vector<Conv> convs(const std::string& name) {
  std::vector<Conv> out;
  for (const auto& n : lowered(fixture(name)).nodes)
    if (n.kind == ok::generate::NodeKind::kConv) out.push_back(n.conv);
  return out;
}

TEST(GenerateConv, EveryLevel1ConvProblemIsSupportedWithoutAVendorCall) {
  const auto names = conv_fixtures();
  ASSERT_EQ(names.size(), 35u);
  const std::regex vendor(
      R"(_ok_torch\.(nn\.functional\.)?conv|F\.conv|self\.\w+\(|_ok_attr\(self, "[^"]+"\)\()");
  std::vector<std::pair<std::string, std::string>> cases;
  for (const auto& name : names)
    cases.emplace_back(name, name.find("separable") != std::string::npos   ? "conv:depthwise+conv"
                             : name.find("depthwise") != std::string::npos ? "conv:depthwise"
                             : name.find("_t") != std::string::npos        ? "conv:transposed"
                                                                           : "conv");
  ok::testing::expect_supported_without_vendor(cases, vendor);
}

TEST(GenerateConv, SpatialDimsAlignRightAndWeightsKeepTheirLayout) {
  // ConvTranspose1d 8 -> 8, kernel 3, length 100 -> 102: d and h are extents of 1.
  const Conv t1 = convs("conv64_t1d").at(0);
  EXPECT_EQ(t1.dims, 1);
  EXPECT_TRUE(t1.transposed);
  EXPECT_EQ(t1.in, (std::array<int64_t, 3>{1, 1, 100}));
  EXPECT_EQ(t1.out, (std::array<int64_t, 3>{1, 1, 102}));
  EXPECT_EQ(t1.k, (std::array<int64_t, 3>{1, 1, 3}));
  // ConvTranspose3d, stride 2, padding (1, 2, 3), output_padding 1, 4 groups.
  const Conv t3 = convs("conv72_t3d_grouped").at(0);
  EXPECT_EQ(t3.groups, 4);
  EXPECT_EQ(t3.cin_g(), 2);
  EXPECT_EQ(t3.stride, (std::array<int64_t, 3>{2, 2, 2}));
  EXPECT_EQ(t3.pad, (std::array<int64_t, 3>{1, 2, 3}));
  EXPECT_EQ(t3.out, (std::array<int64_t, 3>{6, 10, 12}));
  // Depthwise-separable: a depthwise conv, then a pointwise one; two conv steps.
  const auto sep = convs("conv86_separable");
  ASSERT_EQ(sep.size(), 2u);
  EXPECT_TRUE(sep[0].depthwise());
  EXPECT_TRUE(sep[1].pointwise());
  EXPECT_FALSE(sep[0].bias);
  const Conv c50 = convs("conv50_stride4_bias").at(0);
  EXPECT_TRUE(c50.bias);
  EXPECT_EQ(c50.macs(), int64_t{2} * 96 * 3 * 121 * 55 * 55);
}

TEST(GenerateConv, MalformedOrInconsistentConvsAreNamed) {
  json ir = fixture("conv55_2d");
  ir["attrs"][0]["shape"] = {16, 4, 3, 3};  // weight of 4 input channels for 8
  auto skills = ok::generate::load_skills(kSkills);
  ASSERT_TRUE(skills.has_value());
  auto bad = ok::generate::lower(ir, *skills);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("conv weight (16, 4, 3, 3) is not [16, 8, ...]"),
            std::string::npos)
      << bad.error().message;
  ir = fixture("conv55_2d");
  ir["nodes"][0]["kwargs"]["padding"] = {1, 2};  // the IR's output shape is for no padding
  auto odd = ok::generate::lower(ir, *skills);
  ASSERT_TRUE(odd.has_value());
  EXPECT_NE(odd->unsupported.find("conv output extent 10 along spatial dim 0 is not the 12"),
            std::string::npos)
      << odd->unsupported;
}

TEST(GenerateConv, ParameterSpacesFitTheShapesInPriorOrder) {
  // Depthwise: one output channel per group, so no channel tile; Triton runs the direct kernel.
  Proposal cpu = must(fixture("conv82_depthwise"), "cpu", 0, 0);
  for (const auto& c : cpu.candidates) EXPECT_EQ(c.params["cpu-conv"]["BCO"], 1);
  Proposal dw = must(fixture("conv82_depthwise"), "triton", 0, 0);
  EXPECT_EQ(dw.candidates.at(0).params["triton-conv"]["form"], "direct");
  Proposal dense = must(fixture("conv55_2d"), "triton", 0, 0);
  EXPECT_EQ(dense.candidates.at(0).params["triton-conv"]["form"], "gemm");
  EXPECT_NE(dense.candidates.at(0).source.find("input_precision=\"ieee\""), std::string::npos);
  // CUDA: the implicit GEMM for a dense conv and for a transposed one whose stride 5 x 5 leaves
  // each output 1 tap in 25 (8 input channels: BK 8 slices lie in one tap, skipped for pixel tiles
  // of a phase the tap cannot reach); the direct kernel for a depthwise one and for a transposed
  // stride 2 x 2 x 2 over 2 input channels a group (no slice within one tap: no skipping).
  auto first_form = [](const char* name) {
    return must(fixture(name), "cuda", 0, 1).candidates.at(0).params["cuda-conv"]["form"];
  };
  EXPECT_EQ(first_form("conv55_2d"), "gemm");
  EXPECT_EQ(first_form("conv82_depthwise"), "direct");
  EXPECT_EQ(first_form("conv81_t2d_all"), "gemm");
  EXPECT_EQ(first_form("conv72_t3d_grouped"), "direct");
  EXPECT_EQ(first_form("conv69_t2d_asym"), "gemm");
  for (const char* backend : {"cpu", "triton", "cuda"}) {
    Proposal p = must(fixture("conv63_2d"), backend, 0, 0);
    EXPECT_GE(p.candidates.size(), 8u) << backend;
    std::set<std::string> distinct;
    for (const auto& c : p.candidates) distinct.insert(c.params.dump());
    EXPECT_EQ(distinct.size(), p.candidates.size()) << backend;
  }
}

TEST(GenerateConv, TheBiasRunsInTheEpilogueSlot) {
  const std::string cpu = must(fixture("conv50_stride4_bias"), "cpu").candidates.at(0).source;
  EXPECT_NE(cpu.find("v += bias[co];"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("SH = 4, SW = 4, PD = 0, PH = 2, PW = 2"), std::string::npos) << cpu;
  const std::string tr = must(fixture("conv50_stride4_bias"), "triton").candidates.at(0).source;
  EXPECT_NE(tr.find("acc += tl.load(b_ptr + co"), std::string::npos) << tr;
  const std::string none = must(fixture("conv55_2d"), "cuda").candidates.at(0).source;
  EXPECT_EQ(none.find("bias"), std::string::npos);
}

TEST(GenerateConv, TritonSourcesParseAsPython) {
  if (run("/usr/bin/python3 -c pass >/dev/null 2>&1") != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const fs::path dir = fs::temp_directory_path() / ("ok_conv_ast_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* name : {"conv50_stride4_bias", "conv75_t2d_all", "conv82_depthwise",
                           "conv86_separable", "conv77_t3d_all"}) {
    Proposal p = must(fixture(name), "triton", 0, 0);
    std::set<std::string> forms;
    for (const auto& c : p.candidates) {
      const std::string form = c.params["triton-conv"]["form"];
      if (!forms.insert(form).second) continue;
      const fs::path file = dir / (std::string(name) + "_" + form + ".py");
      std::ofstream(file) << c.source;
      EXPECT_EQ(run("/usr/bin/python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' " +
                    file.string()),
                0)
          << name << " " << form;
    }
    EXPECT_EQ(forms.size(), 2u) << name;
  }
  fs::remove_all(dir);
}

TEST(GenerateConv, CudaImplicitGemmPointsFitTheirThreadsAndSharedMemory) {
  // Every implicit-GEMM point: 64-512 threads, the gather's pixel column BM dividing them, at most
  // K tile rows per pass, tiles no larger than the conv's dimensions rounded up, 48 KiB of shared
  // memory; the implicit GEMM first.
  const Conv c = convs("conv63_2d").at(0);  // M = 2 x 22 x 22, 16 output channels, K = 36
  Proposal p = must(fixture("conv63_2d"), "cuda", 0, 0);
  size_t gemm = 0;
  for (const auto& cand : p.candidates) {
    const auto& q = cand.params["cuda-conv"];
    if (q["form"] != "gemm") continue;
    ++gemm;
    const int bm = q["BM"], bn = q["BN"], bk = q["BK"], tm = q["TM"], tn = q["TN"];
    const int threads = (bm / tm) * (bn / tn);
    EXPECT_TRUE(threads >= 64 && threads <= 512 && threads % bm == 0 && threads / bm <= bk)
        << q.dump();
    EXPECT_LE(bn, 32) << q.dump();  // 16 output channels: the smallest BN
    EXPECT_LE(bk, 64) << q.dump();
    EXPECT_LE(2 * bk * (bm + bn + 4) * 4, 48 * 1024) << q.dump();
  }
  EXPECT_GE(gemm, 8u);
  EXPECT_EQ(c.cout_g(), 16);
  EXPECT_EQ(p.candidates.at(0).params["cuda-conv"]["form"], "gemm");
}

TEST(GenerateConv, CudaSourcesCompileWithNvcc) {
  if (run("nvcc --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no nvcc on PATH";
  const fs::path dir = fs::temp_directory_path() / ("ok_conv_nvcc_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // The first point of each form: strided and padded with a bias, transposed with everything,
  // 3d transposed and grouped, two convs in one module, depthwise. Below 4 output channels a
  // group (72: 2, 82: 1) only the direct kernel is offered.
  for (const char* name : {"conv50_stride4_bias", "conv75_t2d_all", "conv72_t3d_grouped",
                           "conv86_separable", "conv82_depthwise"}) {
    std::set<std::string> forms;
    for (const auto& c : must(fixture(name), "cuda", 0, 0).candidates) {
      const std::string form = c.params["cuda-conv"]["form"];
      if (!forms.insert(form).second) continue;
      EXPECT_EQ(ok::testing::nvcc_compile(c.source, dir / (std::string(name) + "_" + form)), 0)
          << name << " " << form;
      // A depthwise-separable pair shares the point of its larger, pointwise conv: under a GEMM
      // point the depthwise half still runs the direct kernel.
      if (std::string(name) == "conv86_separable" && form == "gemm") {
        EXPECT_NE(c.source.find("__shared__ float ws["), std::string::npos);
        EXPECT_NE(c.source.find("SLICE_IN_TAP"), std::string::npos);
      }
    }
    const bool thin =
        std::string(name) == "conv72_t3d_grouped" || std::string(name) == "conv82_depthwise";
    EXPECT_EQ(forms.size(), thin ? 1u : 2u) << name;
  }
  // Level1/76 at its real size: the input has 2.1e9 elements, so the GEMM indexes in 64 bits.
  json ir = fixture("conv76_1d_strided");
  ir["inputs"][0]["shape"] = {64, 64, 524280};
  ir["attrs"][0]["shape"] = {128, 64, 3};
  ir["nodes"][0]["shape"] = {64, 128, 174758};
  const auto big = must(ir, "cuda", 0, 1).candidates.at(0);
  EXPECT_EQ(big.params["cuda-conv"]["form"], "gemm");
  EXPECT_NE(big.source.find("typedef long long I;"), std::string::npos);
  EXPECT_EQ(ok::testing::nvcc_compile(big.source, dir / "conv76_full"), 0);
  fs::remove_all(dir);
}

}  // namespace
