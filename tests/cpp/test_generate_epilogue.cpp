// Level 2's tails in the epilogue: a pointwise group that reads a GEMM's (nn.Linear's) or a
// convolution's output element for element, where nothing else reads it, runs in that kernel's
// epilogue slot on every backend (plan.cpp, fuse_epilogues; emit_epilogue.cpp). Fixtures:
// tests/fixtures/generate/epi_*.json, the worker's analyze of small references.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "generate/generate.hpp"
#include "generate/graph.hpp"
#include "generate/plan.hpp"
#include "generate/skills.hpp"
#include "support/generate_fixtures.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ok::generate::Plan;
using ok::generate::Proposal;
using ok::generate::StepKind;
using ok::testing::fixture;
using ok::testing::forward_of;
using ok::testing::kSkills;
using ok::testing::must;
using ok::testing::run;

Plan planned(const json& ir) {
  auto skills = ok::generate::load_skills(kSkills);
  EXPECT_TRUE(skills.has_value());
  auto l = ok::generate::lower(ir, *skills);
  EXPECT_TRUE(l.has_value());
  EXPECT_EQ(l->unsupported, "");
  auto p = ok::generate::make_plan(l->graph, *skills);
  EXPECT_EQ(p.unsupported, "");
  return p.plan;
}

// The steps that launch a kernel.
std::vector<ok::generate::Step> kernels(const Plan& plan) {
  std::vector<ok::generate::Step> out;
  for (const auto& s : plan.steps)
    if (s.kind != StepKind::kView) out.push_back(s);
  return out;
}

// Kernel launches in a candidate's forward (C++/CUDA library calls, Triton grid launches).
size_t launches(const std::string& source) {
  const std::string fwd = forward_of(source);
  const std::regex launch(R"(_ok_lib\.\w+\(|\w+\[\([^\]]*\)\]\()");
  return static_cast<size_t>(
      std::distance(std::sregex_iterator(fwd.begin(), fwd.end(), launch), std::sregex_iterator()));
}

const std::regex kVendor(R"(self\.\w+\(|_ok_attr\(self, "[^"]*"\)\(|_ok_torch\.(nn|matmul|mm))");

TEST(GenerateEpilogue, LinearTimesTwoLeakyReluIsOneKernel) {
  const Plan plan = planned(fixture("epi_gemm_mul_leaky"));
  const auto steps = kernels(plan);
  ASSERT_EQ(steps.size(), 1u) << plan.pattern;
  EXPECT_EQ(steps[0].kind, StepKind::kGemm);
  ASSERT_GE(steps[0].epilogue, 0);
  // The bias add, the multiply and the LeakyReLU.
  EXPECT_EQ(plan.groups[steps[0].epilogue].nodes.size(), 3u);
  EXPECT_EQ(plan.groups[steps[0].epilogue].fused_into, steps[0].node);
  for (const char* backend : {"cpu", "triton", "cuda"}) {
    Proposal p = must(fixture("epi_gemm_mul_leaky"), backend);
    ASSERT_TRUE(p.supported) << backend << ": " << p.reason;
    EXPECT_EQ(p.pattern, "gemm:epilogue");
    for (const auto& c : p.candidates) {
      EXPECT_EQ(launches(c.source), 1u) << backend << "\n" << forward_of(c.source);
      EXPECT_FALSE(std::regex_search(forward_of(c.source), kVendor)) << forward_of(c.source);
    }
  }
  const std::string cpu = must(fixture("epi_gemm_mul_leaky"), "cpu", 0, 1).candidates.at(0).source;
  EXPECT_NE(cpu.find("v = v"), std::string::npos) << cpu;  // the stored value is the tail's
  EXPECT_NE(cpu.find("* 0.1f"), std::string::npos) << cpu;
}

TEST(GenerateEpilogue, AProductReadElsewhereIsStoredAndItsTailKeptApart) {
  // y = x @ w; z = leaky_relu(y * 2); cumsum(y) + z: the scan reads y too, so the product is
  // stored and its tail is a pointwise kernel of its own.
  const Plan plan = planned(fixture("epi_matmul_read_twice"));
  const auto steps = kernels(plan);
  ASSERT_EQ(steps.size(), 4u) << plan.pattern;
  EXPECT_EQ(steps[0].kind, StepKind::kGemm);
  EXPECT_EQ(steps[0].epilogue, -1);
  EXPECT_EQ(steps[1].kind, StepKind::kKernel);
  for (const char* backend : {"cpu", "triton", "cuda"}) {
    Proposal p = must(fixture("epi_matmul_read_twice"), backend, 0, 1);
    ASSERT_TRUE(p.supported) << backend << ": " << p.reason;
    EXPECT_EQ(p.pattern, "gemm+pointwise+scan:sum+pointwise");
    EXPECT_EQ(launches(p.candidates.at(0).source), 4u) << backend;
  }
}

TEST(GenerateEpilogue, AnEpilogueValueReadElsewhereIsStoredAsASecondOutput) {
  // The same through nn.Linear: the raw product is read by the bias add alone, so the bias add,
  // the multiply and the LeakyReLU all run in the GEMM's epilogue; the biased y, which the scan
  // reads, is stored through a second output pointer beside z.
  const Plan plan = planned(fixture("epi_gemm_read_twice"));
  const auto steps = kernels(plan);
  ASSERT_EQ(steps.size(), 3u) << plan.pattern;
  ASSERT_GE(steps[0].epilogue, 0);
  EXPECT_EQ(plan.groups[steps[0].epilogue].outputs.size(), 2u);
  for (const char* backend : {"cpu", "triton", "cuda"}) {
    Proposal p = must(fixture("epi_gemm_read_twice"), backend, 0, 1);
    ASSERT_TRUE(p.supported) << backend << ": " << p.reason;
    EXPECT_EQ(p.pattern, "gemm:epilogue+scan:sum+pointwise");
    EXPECT_NE(p.candidates.at(0).source.find("ep_out1"), std::string::npos) << backend;
    EXPECT_EQ(launches(p.candidates.at(0).source), 3u) << backend;
  }
}

TEST(GenerateEpilogue, ConvolutionTailReadsItsOutputTwiceABroadcastParameterAndAnInput) {
  // sigmoid(relu(conv(x)) + bias[C, 1, 1]) * conv(x) + r: one kernel, bias and r extra inputs.
  const Plan plan = planned(fixture("epi_conv_residual"));
  const auto steps = kernels(plan);
  ASSERT_EQ(steps.size(), 1u) << plan.pattern;
  EXPECT_EQ(steps[0].kind, StepKind::kConv);
  EXPECT_GE(steps[0].epilogue, 0);
  for (const char* backend : {"cpu", "triton", "cuda"}) {
    Proposal p = must(fixture("epi_conv_residual"), backend, 0, 0);
    ASSERT_TRUE(p.supported) << backend << ": " << p.reason;
    EXPECT_EQ(p.pattern, "conv:epilogue");
    for (const auto& c : p.candidates) {
      EXPECT_EQ(launches(c.source), 1u) << backend;
      EXPECT_NE(c.source.find("ep_in1"), std::string::npos) << backend;
    }
  }
}

TEST(GenerateEpilogue, SplitKIsNotOfferedToAProductWithAnEpilogue) {
  // K = 8192 over few tiles: a plain product is offered split-K, one with a tail is not (its
  // partial sums are added atomically; the tail must see the whole sum).
  auto has_split = [](const Proposal& p) {
    for (const auto& c : p.candidates)
      if (c.params["triton-gemm"]["SPLIT_K"].get<int>() > 1) return true;
    return false;
  };
  EXPECT_TRUE(has_split(must(fixture("gemm_large_k"), "triton", 0, 0)));
  json ir = fixture("epi_gemm_mul_leaky");
  ir["inputs"][0]["shape"] = {4, 8192};
  for (auto& a : ir["attrs"])
    if (a["name"] == "gemm.weight") a["shape"] = {24, 8192};
  for (auto& n : ir["nodes"]) n["shape"] = {4, 24};  // every node's output: [rows, 24]
  Proposal p = must(ir, "triton", 0, 0);
  ASSERT_TRUE(p.supported) << p.reason;
  EXPECT_NE(p.pattern.find("gemm:epilogue"), std::string::npos) << p.pattern;
  ASSERT_FALSE(p.candidates.empty());
  EXPECT_FALSE(has_split(p));
}

TEST(GenerateEpilogue, AProductThatDoesNotFillItsShapeIsMalformed) {
  // A Linear over [4, 40] gives 96 values; an IR shape of [3, 24] (72) must not be reshaped into.
  json ir = fixture("epi_gemm_mul_leaky");
  ir["inputs"][0]["shape"] = {4, 40};
  auto skills = ok::generate::load_skills(kSkills);
  ASSERT_TRUE(skills.has_value());
  auto bad = ok::generate::lower(ir, *skills);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("its 96 elements do not fill its shape (3, 24)"),
            std::string::npos)
      << bad.error().message;
}

TEST(GenerateEpilogue, TritonSourcesParseAndCudaSourcesCompile) {
  const fs::path dir = fs::temp_directory_path() / ("ok_epi_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const bool python = run("/usr/bin/python3 -c pass >/dev/null 2>&1") == 0;
  const bool nvcc = run("nvcc --version >/dev/null 2>&1") == 0;
  for (const char* name : {"epi_gemm_mul_leaky", "epi_gemm_read_twice", "epi_matmul_read_twice",
                           "epi_conv_residual"}) {
    if (python) {
      Proposal p = must(fixture(name), "triton", 0, 0);
      std::set<std::string> seen;  // one candidate per kernel form (conv: gemm and direct)
      for (const auto& c : p.candidates) {
        const std::string form = c.params.contains("triton-conv")
                                     ? c.params["triton-conv"]["form"].get<std::string>()
                                     : "gemm";
        if (!seen.insert(form).second) continue;
        const fs::path file = dir / (std::string(name) + "_" + form + ".py");
        std::ofstream(file) << c.source;
        EXPECT_EQ(
            run("/usr/bin/python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' " +
                file.string()),
            0)
            << name << " " << form;
      }
    }
    if (nvcc)
      EXPECT_EQ(ok::testing::nvcc_compile(must(fixture(name), "cuda", 0, 1).candidates.at(0).source,
                                          dir / name),
                0)
          << name;
  }
  fs::remove_all(dir);
  if (!python || !nvcc) GTEST_SKIP() << "no /usr/bin/python3 or no nvcc on PATH: partly checked";
}

}  // namespace
