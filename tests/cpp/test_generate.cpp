#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "generate/emit.hpp"
#include "generate/generate.hpp"
#include "support/generate_fixtures.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ok::generate::Proposal;
using ok::generate::propose;
using ok::testing::fixture;
using ok::testing::kReference;
using ok::testing::kRoot;
using ok::testing::kSkills;
using ok::testing::must;

using ok::testing::node;

json graph(json inputs, json nodes, const std::string& out, json attrs = json::array()) {
  return {{"traceable", true},
          {"reason", nullptr},
          {"inputs", inputs},
          {"attrs", attrs},
          {"nodes", nodes},
          {"outputs", json::array({{{"node", out}}})},
          {"module_types", json::object()}};
}

json input(const std::string& name, json shape, const std::string& dtype = "float32") {
  return {{"name", name}, {"index", 0}, {"shape", shape}, {"dtype", dtype}};
}

TEST(Generate, PatternsOfTheFixtures) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"swish_chain", "pointwise"},
      {"relu", "pointwise"},
      {"gelu", "pointwise"},
      {"mingpt_gelu", "pointwise"},
      {"softmax", "row:softmax"},
      {"log_softmax", "row:log_softmax"},
      {"rmsnorm", "row:mean"},
      {"layernorm", "row:layer_norm"},
      {"sum", "reduce:sum"},
      {"max", "reduce:amax"},
      {"conv_relu_bias", "vendor+pointwise"},
      {"gemm_add_relu", "vendor+pointwise"}};
  for (const auto& [name, pattern] : cases) {
    for (const char* backend : {"cpu", "triton", "cuda"}) {
      Proposal p = must(fixture(name), backend);
      EXPECT_TRUE(p.supported) << name << " " << backend << ": " << p.reason;
      EXPECT_EQ(p.pattern, pattern) << name;
      ASSERT_FALSE(p.candidates.empty()) << name << " " << backend;
      for (const auto& c : p.candidates) {
        EXPECT_NE(c.source.find("class ModelNew(Model):"), std::string::npos);
        EXPECT_NE(c.source.find(kReference), std::string::npos) << "the reference is kept verbatim";
        EXPECT_NE(c.source.find("# pattern: " + pattern), std::string::npos);
        EXPECT_EQ(c.pattern, pattern);
        EXPECT_FALSE(c.skill.empty());
        EXPECT_TRUE(c.params.is_object());
      }
    }
  }
}

TEST(Generate, BackendsEmitTheirKernelForms) {
  const std::string cpu = must(fixture("softmax"), "cpu").candidates.at(0).source;
  EXPECT_NE(cpu.find("compile_cpp"), std::string::npos);
  EXPECT_NE(cpu.find("#pragma omp simd reduction(max:"), std::string::npos);
  const std::string tr = must(fixture("softmax"), "triton").candidates.at(0).source;
  EXPECT_NE(tr.find("@triton.jit"), std::string::npos);
  EXPECT_NE(tr.find("tl.max("), std::string::npos);
  const std::string cu = must(fixture("softmax"), "cuda").candidates.at(0).source;
  EXPECT_NE(cu.find("extern \"C\" int ok_launch_0"), std::string::npos);
  EXPECT_NE(cu.find("ok_block_reduce<TJ, TR>"), std::string::npos);
  EXPECT_NE(cu.find("float4"), std::string::npos) << "R % 4 == 0: vectorised loads first";
}

TEST(Generate, InnerReductionsTileTheContiguousAxis) {
  // RMSNorm reduces dim 1 of (4, 64, 64, 64): inner = 4096 is the contiguous axis.
  const std::string cpu = must(fixture("rmsnorm"), "cpu").candidates.at(0).source;
  EXPECT_NE(cpu.find("constexpr int64_t TJ"), std::string::npos);
  const std::string tr = must(fixture("rmsnorm"), "triton").candidates.at(0).source;
  EXPECT_NE(tr.find("j = jj[None, :]"), std::string::npos);
  EXPECT_NE(tr.find("[None, :]"), std::string::npos);
  const Proposal cu = must(fixture("rmsnorm"), "cuda");
  EXPECT_GT(cu.candidates.at(0).params["cuda-row"]["TJ"].get<int>(), 1);
}

TEST(Generate, BroadcastOperandsUseConstantIndexArithmetic) {
  // A conv bias (16, 1, 1) over (4, 16, 30, 30).
  const std::string cpu = must(fixture("conv_relu_bias"), "cpu").candidates.at(0).source;
  EXPECT_NE(cpu.find("in1[(o % 16)]"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("self.conv(x)"), std::string::npos);
  const std::string tr = must(fixture("conv_relu_bias"), "triton").candidates.at(0).source;
  EXPECT_NE(tr.find("((i // 900) % 16)"), std::string::npos) << tr;
  using ok::generate::Coord;
  EXPECT_EQ(ok::generate::leaf_index({4, 16, 30, 30}, {16, 1, 1}, {Coord{"i", 0, 4}}, false),
            "((i / 900) % 16)");
  EXPECT_EQ(ok::generate::leaf_index({8, 32}, {32}, {Coord{"i", 0, 2}}, true), "(i % 32)");
  EXPECT_EQ(ok::generate::leaf_index({8, 32}, {8, 1}, {Coord{"i", 0, 2}}, true), "(i // 32)");
  EXPECT_EQ(ok::generate::leaf_index({8, 32}, {1}, {Coord{"i", 0, 2}}, true), "0");
}

TEST(Generate, DeterministicForASeed) {
  for (const char* backend : {"cpu", "triton", "cuda"}) {
    Proposal a = must(fixture("layernorm"), backend, 7);
    Proposal b = must(fixture("layernorm"), backend, 7);
    ASSERT_EQ(a.candidates.size(), b.candidates.size());
    for (size_t i = 0; i < a.candidates.size(); ++i) {
      EXPECT_EQ(a.candidates[i].source, b.candidates[i].source);
      EXPECT_EQ(a.candidates[i].params, b.candidates[i].params);
    }
    // Another seed orders ties differently but proposes the same set.
    Proposal c = must(fixture("layernorm"), backend, 8, 1000);
    Proposal d = must(fixture("layernorm"), backend, 7, 1000);
    std::multiset<std::string> sc, sd;
    for (const auto& x : c.candidates) sc.insert(x.params.dump());
    for (const auto& x : d.candidates) sd.insert(x.params.dump());
    EXPECT_EQ(sc, sd);
  }
}

TEST(Generate, MaxCandidatesAndDistinctParams) {
  Proposal p = must(fixture("softmax"), "triton", 0, 3);
  EXPECT_EQ(p.candidates.size(), 3u);
  std::set<std::string> seen;
  for (const auto& c : p.candidates) EXPECT_TRUE(seen.insert(c.params.dump()).second);
  Proposal all = must(fixture("softmax"), "cuda", 0, 0);
  EXPECT_GT(all.candidates.size(), 3u) << "0 = the whole parameter space";
}

TEST(Generate, UnsupportedGraphsSayWhy) {
  auto reason = [](const json& ir) {
    Proposal p = must(ir, "cpu");
    EXPECT_FALSE(p.supported);
    EXPECT_TRUE(p.candidates.empty());
    return p.reason;
  };
  json x = json::array({input("x", {8, 32})});
  EXPECT_NE(reason(graph(x,
                         {node("u", "unknown", {{{"input", "x"}}}, {8, 32},
                               {{"target", "torch.cumsum"}})},
                         "u"))
                .find("torch.cumsum"),
            std::string::npos);
  EXPECT_NE(reason(graph(json::array({input("x", {8, 32}, "float16")}),
                         {node("r", "relu", {{{"input", "x"}}}, {8, 32}, {}, "float16")}, "r"))
                .find("unsupported dtype float16"),
            std::string::npos);
  json two = graph(x, {node("r", "relu", {{{"input", "x"}}}, {8, 32})}, "r");
  two["outputs"].push_back({{"node", "r"}});
  EXPECT_NE(reason(two).find("returns 2 values"), std::string::npos);
  json untraced = {{"traceable", false}, {"reason", "data-dependent control flow"}};
  EXPECT_NE(reason(untraced).find("data-dependent control flow"), std::string::npos);
  json x3 = json::array({input("x", {4, 8, 16})});
  EXPECT_NE(reason(graph(x3,
                         {node("s", "sum", {{{"input", "x"}}}, {8},
                               {{"dim", {0, 2}}, {"keepdim", false}})},
                         "s"))
                .find("non-adjacent"),
            std::string::npos);
  // argmax over one dim is generated (test_generate_window.cpp); over two it is not.
  EXPECT_NE(reason(graph(x,
                         {node("a", "argmax", {{{"input", "x"}}}, json::array(),
                               {{"dim", {0, 1}}, {"keepdim", false}}, "int64")},
                         "a"))
                .find("argmax over several dims"),
            std::string::npos);
}

TEST(Generate, VendorOpBetweenAReductionAndItsUseSplitsTheGroup) {
  // m = x.mean(1, keepdim) ; y = self.lin(x) ; z = y - m
  json x = json::array({input("x", {8, 32})});
  json ir = graph(
      x,
      {node("m", "mean", {{{"input", "x"}}}, {8, 1}, {{"dim", {1}}, {"keepdim", true}}),
       node("y", "module", {{{"input", "x"}}}, {8, 32}, {{"target", "lin"}, {"type", "Linear"}}),
       node("z", "sub", {{{"node", "y"}}, {{"node", "m"}}}, {8, 32})},
      "z");
  for (const char* backend : {"cpu", "triton", "cuda"}) {
    Proposal p = must(ir, backend);
    ASSERT_TRUE(p.supported) << p.reason;
    EXPECT_EQ(p.pattern, "reduce:mean+vendor+pointwise");
    const std::string& s = p.candidates.at(0).source;
    EXPECT_LT(s.find("self.lin(x)"), s.rfind("_ok_v")) << s;
  }
}

TEST(Generate, ElementwiseEpiloguesAndProloguesFuseIntoTheRow) {
  // y = softmax(relu(x) * 2) + 1 : one row group.
  json x = json::array({input("x", {8, 32})});
  json ir = graph(x,
                  {node("r", "relu", {{{"input", "x"}}}, {8, 32}),
                   node("m", "mul", {{{"node", "r"}}, {{"scalar", 2.0}}}, {8, 32}),
                   node("s", "softmax", {{{"node", "m"}}}, {8, 32}, {{"dim", 1}}),
                   node("a", "add", {{{"node", "s"}}, {{"scalar", 1.0}}}, {8, 32})},
                  "a");
  Proposal p = must(ir, "cpu");
  ASSERT_TRUE(p.supported) << p.reason;
  EXPECT_EQ(p.pattern, "row:softmax");
  const std::string& s = p.candidates.at(0).source;
  EXPECT_EQ(s.find("ok_kernel_1"), std::string::npos) << "one kernel";
}

TEST(Generate, MalformedIrAndBadBackendAreErrors) {
  auto p = propose(json::array(), "cpu", kReference, kSkills, 0, 4);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().kind, ok::util::ErrorKind::kBadInput);
  json bad =
      graph(json::array({input("x", {8})}), {node("r", "relu", {{{"node", "nope"}}}, {8})}, "r");
  p = propose(bad, "cpu", kReference, kSkills, 0, 4);
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().message.find("nope"), std::string::npos);
  p = propose(fixture("relu"), "metal", kReference, kSkills, 0, 4);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().kind, ok::util::ErrorKind::kUsage);
  p = propose(fixture("relu"), "cpu", kReference, kRoot / "no-such-dir", 0, 4);
  ASSERT_FALSE(p.has_value());
}

TEST(Generate, SkillsCarryTheirFields) {
  auto skills = ok::generate::load_skills(kSkills);
  ASSERT_TRUE(skills.has_value()) << skills.error().message;
  EXPECT_TRUE(skills->ops.contains("gelu_tanh"));
  for (const char* backend : {"cpu", "triton", "cuda"})
    for (const char* pattern : {"pointwise", "row"}) {
      const auto* s = skills->find(backend, pattern);
      ASSERT_NE(s, nullptr) << backend << " " << pattern;
      EXPECT_FALSE(s->id.empty());
      EXPECT_FALSE(s->description.empty());
      EXPECT_FALSE(s->params.empty());
      EXPECT_FALSE(s->templates.empty());
    }
}

}  // namespace
