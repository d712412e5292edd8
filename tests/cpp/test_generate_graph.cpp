// generate/graph.hpp: lower() over the graph IR's vocabulary ("ir_ops" of
// data/skills/elementwise_ops.json, which the worker's analyze is held to in
// python/tests/test_analyze_ops.py), the op families' lowering table, named operands.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "generate/graph.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ok::generate::Graph;
using ok::generate::Lowered;
using ok::generate::Operand;
using ok::generate::Skills;

const fs::path kSkills = fs::path(OPENKERNEL_TEST_SOURCE_ROOT) / "data" / "skills";

const Skills& skills() {
  static const Skills s = [] {
    auto r = ok::generate::load_skills(kSkills);
    if (!r) throw std::runtime_error(r.error().message);
    return *r;
  }();
  return s;
}

// One node over the input x (4 x 8): op, args, kwargs, the output shape and dtype.
json one_node(const std::string& op, json args, json kwargs, json shape,
              const std::string& dtype = "float32") {
  json node = {{"name", "y"},      {"op", op},       {"args", args},
               {"kwargs", kwargs}, {"shape", shape}, {"dtype", dtype}};
  return {{"traceable", true},
          {"inputs", json::array({{{"name", "x"}, {"index", 0}, {"shape", {4, 8}}}})},
          {"attrs", json::array()},
          {"nodes", json::array({node})},
          {"outputs", json::array({{{"node", "y"}}})}};
}

// A minimal well-formed node of `op` in `family`.
json minimal(const std::string& family, const std::string& op) {
  const json x = {{"input", "x"}};
  if (family == "binary") return one_node(op, {x, {{"scalar", 2.0}}}, json::object(), {4, 8});
  if (family == "reduction") {
    bool arg = op == "argmax" || op == "argmin";
    return one_node(op, {x}, {{"dim", {1}}, {"keepdim", false}}, {4}, arg ? "int64" : "float32");
  }
  if (family == "softmax") return one_node(op, {x}, {{"dim", {1}}}, {4, 8});
  if (family == "layer_norm")
    return one_node(op, {x, {{"value", nullptr}}, {{"value", nullptr}}},
                    {{"normalized_shape", {8}}, {"eps", 1e-5}}, {4, 8});
  if (family == "view") return one_node(op, {x}, {{"shape", {32}}}, {32});
  // F.linear(x, weight): a [4, 8] x [8] product by x itself as a [4 outputs, 8] weight.
  if (op == "linear") return one_node(op, {x, x}, json::object(), {4, 4});
  if (family == "vendor") return one_node(op, {x}, {{"target", "m"}}, {4, 8});
  if (family == "permute") return one_node(op, {x}, {{"dims", {1, 0}}}, {8, 4});
  if (family == "diag") {
    json ir = one_node(op, {x}, {{"diagonal", 0}}, {8, 8});
    ir["inputs"][0]["shape"] = {8};
    return ir;
  }
  if (family == "matmul" || family == "triangle") {
    // x @ x.T, and its triangle.
    json ir = one_node("permute", {x}, {{"dims", {1, 0}}}, {8, 4});
    ir["nodes"][0]["name"] = "xt";
    const json product = {{"name", "y"},
                          {"op", family == "matmul" ? op : "matmul"},
                          {"args", {x, {{"node", "xt"}}}},
                          {"kwargs", json::object()},
                          {"shape", {4, 4}},
                          {"dtype", "float32"}};
    ir["nodes"].push_back(product);
    if (family == "triangle") {
      ir["nodes"][1]["name"] = "p";
      ir["nodes"].push_back({{"name", "y"},
                             {"op", op},
                             {"args", {{{"node", "p"}}}},
                             {"kwargs", {{"diagonal", 0}}},
                             {"shape", {4, 4}},
                             {"dtype", "float32"}});
    }
    return ir;
  }
  if (family == "norm") {
    const json none = {{"value", nullptr}};
    json kwargs = {{"eps", 1e-5}, {"training", true}, {"num_groups", 2}};
    return one_node(op, {x, none, none}, kwargs, {4, 8});
  }
  if (family == "loss" && op == "cross_entropy") {  // x's 4 rows of 8 classes, int64 targets
    json ir = one_node(op, {x, {{"input", "t"}}}, {{"reduction", "mean"}}, json::array());
    ir["inputs"].push_back({{"name", "t"}, {"index", 1}, {"shape", {4}}, {"dtype", "int64"}});
    return ir;
  }
  if (family == "loss") {
    json args = op == "triplet_margin_loss" ? json{x, x, x} : json{x, x};
    return one_node(op, args, {{"reduction", "mean"}}, json::array());
  }
  if (family == "conv") {  // x as [4 batches, 8 channels, length 1] through a 1x1 conv
    json ir = one_node(op, {x, {{"attr", "w"}}, {{"value", nullptr}}},
                       {{"dims", 1},
                        {"stride", {1}},
                        {"padding", {0}},
                        {"dilation", {1}},
                        {"groups", 1},
                        {"transposed", false},
                        {"output_padding", {0}}},
                       {4, 2, 1});
    ir["inputs"][0]["shape"] = {4, 8, 1};
    ir["attrs"] = {{{"name", "w"}, {"shape", {2, 8, 1}}, {"dtype", "float32"}}};
    return ir;
  }
  if (family == "pool" && op.starts_with("adaptive_"))
    return one_node(op, {x}, {{"output_size", {1}}}, {4, 1});
  if (family == "pool")
    return one_node(op, {x}, {{"kernel_size", {2}}, {"stride", {2}}, {"padding", {0}}}, {4, 4});
  if (family == "scan") return one_node(op, {x}, {{"combine", "sum"}, {"dim", 1}}, {4, 8});
  if (family == "index") {
    if (op == "flip") return one_node(op, {x}, {{"dims", {1}}}, {4, 8});
    if (op == "narrow") return one_node(op, {x}, {{"dim", 1}, {"start", 0}, {"length", 3}}, {4, 3});
    if (op == "select") return one_node(op, {x}, {{"dim", 1}, {"index", 2}}, {4});
    if (op == "cat") return one_node(op, {x, x}, {{"dim", 1}}, {4, 16});
  }
  json kwargs = op == "clamp" ? json{{"min", 0.0}} : json::object();
  return one_node(op, {x}, kwargs, {4, 8});
}

Lowered must_lower(const json& ir) {
  auto r = ok::generate::lower(ir, skills());
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? *r : Lowered{};
}

TEST(GenerateGraph, EveryFamilyOfTheVocabularyHasALowering) {
  std::set<std::string> families;
  for (const auto& [op, family] : skills().ir_family) families.insert(family);
  families.erase("unlowered");
  auto lowered = ok::generate::lowered_families();
  EXPECT_EQ(families, std::set<std::string>(lowered.begin(), lowered.end()));
}

TEST(GenerateGraph, EveryOpOfTheVocabularyLowers) {
  ASSERT_GT(skills().ir_family.size(), 50u);
  for (const auto& [op, family] : skills().ir_family) {
    if (family == "unlowered") continue;
    Lowered l = must_lower(minimal(family, op));
    EXPECT_EQ(l.unsupported, "") << op;
    EXPECT_FALSE(l.graph.nodes.empty()) << op;
  }
}

TEST(GenerateGraph, OpsOutsideTheLoweredFamiliesSayWhy) {
  const json x = {{"input", "x"}};
  Lowered where = must_lower(one_node("where", {x, x, x}, json::object(), {4, 8}));
  EXPECT_EQ(where.unsupported, "op where (node y) is not handled by the builtin generator");
  Lowered odd = must_lower(one_node("cumsum", {x}, json::object(), {4, 8}));
  EXPECT_EQ(odd.unsupported, "op cumsum (node y) is not handled by the builtin generator");
  Lowered unknown = must_lower(one_node("unknown", {x}, {{"target", "torch.cumsum"}}, {4, 8}));
  EXPECT_EQ(unknown.unsupported, "op torch.cumsum (node y) is not one the builtin generator knows");
}

TEST(GenerateGraph, PointwiseParamsByKeywordByPositionAndDefault) {
  const json x = {{"input", "x"}};
  // Positional after the input, in the op table's order (beta, threshold).
  Graph g = must_lower(one_node("softplus", {x, 2.0, 10.0}, json::object(), {4, 8})).graph;
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].params, json({{"beta", 2.0}, {"threshold", 10.0}}));
  g = must_lower(one_node("softplus", {x}, {{"threshold", 5.0}}, {4, 8})).graph;
  EXPECT_EQ(g.nodes[0].params, json({{"beta", 1.0}, {"threshold", 5.0}}));
  g = must_lower(one_node("threshold", {x, 0.5, -1.0}, json::object(), {4, 8})).graph;
  EXPECT_EQ(g.nodes[0].params, json({{"threshold", 0.5}, {"value", -1.0}}));
  g = must_lower(one_node("leaky_relu", {x}, json::object(), {4, 8})).graph;
  EXPECT_EQ(g.nodes[0].params, json({{"negative_slope", 0.01}}));
  g = must_lower(one_node("relu", {x}, json::object(), {4, 8})).graph;
  EXPECT_EQ(g.nodes[0].params, json::object());
}

TEST(GenerateGraph, CompoundOpsBecomePrimitives) {
  const json x = {{"input", "x"}};
  Graph g = must_lower(one_node("hardtanh", {x}, json::object(), {4, 8})).graph;
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, "maximum");
  EXPECT_EQ(g.nodes[0].args[1].scalar, -1.0);
  EXPECT_EQ(g.nodes[1].op, "minimum");
  g = must_lower(one_node("gelu", {x}, {{"approximate", "tanh"}}, {4, 8})).graph;
  EXPECT_EQ(g.nodes[0].op, "gelu_tanh");
  g = must_lower(one_node("pow", {x, {{"scalar", 3.0}}}, json::object(), {4, 8})).graph;
  ASSERT_EQ(g.nodes.size(), 2u);  // x*x, then (x*x)*x under the node's name
  EXPECT_EQ(g.values[g.output].name, "y");
  g = must_lower(one_node("var", {x}, {{"dim", {1}}, {"correction", 0}}, {4})).graph;
  EXPECT_EQ(g.nodes.back().op, "mul");
  EXPECT_EQ(g.nodes.back().args[1].scalar, 1.0 / 8);
}

TEST(GenerateGraph, VendorNoneArgumentIsANamedOperand) {
  const json x = {{"input", "x"}};
  Graph g = must_lower(one_node("module", {x, x, {{"value", nullptr}}},
                                {{"target", "m"}, {"type", "Bilinear"}}, {4, 8}))
                .graph;
  ASSERT_EQ(g.nodes[0].args.size(), 3u);
  EXPECT_TRUE(g.nodes[0].args[2].is_none());
  EXPECT_TRUE(g.nodes[0].args[2].is_scalar());  // not a tensor
  EXPECT_FALSE(g.nodes[0].args[0].is_none());
}

TEST(GenerateGraph, LinearIsAProductByTheTransposedWeightThenItsBias) {
  const json x = {{"input", "x"}};
  // F.linear(x, x, None): x [4, 8] times x^T, no bias.
  Graph g =
      must_lower(one_node("linear", {x, x, {{"value", nullptr}}}, json::object(), {4, 4})).graph;
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].kind, ok::generate::NodeKind::kGemm);
  EXPECT_TRUE(g.nodes[0].gemm.trans_b);
  EXPECT_EQ(g.nodes[0].gemm.m, 4);
  EXPECT_EQ(g.nodes[0].gemm.n, 4);
  EXPECT_EQ(g.nodes[0].gemm.k, 8);
  // nn.Linear over [2, 3, 8] with its attrs: rows folded, the bias added, the IR's shape back.
  json ir = {
      {"traceable", true},
      {"inputs", {{{"name", "x"}, {"index", 0}, {"shape", {2, 3, 8}}, {"dtype", "float32"}}}},
      {"attrs",
       {{{"name", "lin.weight"}, {"shape", {5, 8}}, {"dtype", "float32"}, {"kind", "parameter"}},
        {{"name", "lin.bias"}, {"shape", {5}}, {"dtype", "float32"}, {"kind", "parameter"}}}},
      {"nodes",
       {{{"name", "y"},
         {"op", "module"},
         {"args", {x}},
         {"kwargs", {{"target", "lin"}, {"type", "Linear"}}},
         {"shape", {2, 3, 5}},
         {"dtype", "float32"}}}},
      {"outputs", {{{"node", "y"}}}},
      {"module_types", {{"lin", "Linear"}}}};
  g = must_lower(ir).graph;
  std::vector<std::string> ops;
  for (const auto& n : g.nodes) ops.push_back(n.op);
  EXPECT_EQ(ops, (std::vector<std::string>{"reshape", "gemm", "add", "reshape"}));
  EXPECT_EQ(g.values[g.output].shape, (ok::generate::Shape{2, 3, 5}));
  // Without its weight among the attrs (a hand-written IR) the module stays a PyTorch call.
  ir["attrs"] = json::array();
  g = must_lower(ir).graph;
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].kind, ok::generate::NodeKind::kVendor);
}

TEST(GenerateGraph, OperandConstructors) {
  EXPECT_TRUE(Operand::none().is_none());
  EXPECT_TRUE(Operand::number(2.5).is_scalar());
  EXPECT_FALSE(Operand::number(2.5).is_none());
  EXPECT_EQ(Operand::number(2.5).scalar, 2.5);
  EXPECT_FALSE(Operand::tensor(3).is_scalar());
  EXPECT_EQ(Operand::tensor(3).value, 3);
}

}  // namespace
