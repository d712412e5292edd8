// generate: split reductions (split.cpp) and the norm and loss families (lower_norm.cpp): which
// reductions are split and into what plan, and how BatchNorm, InstanceNorm, GroupNorm and the
// losses lower to kernel groups on every backend (cross_entropy: an int64 target, the column index
// in the row kernels).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "generate/graph.hpp"
#include "generate/plan.hpp"
#include "support/generate_fixtures.hpp"

namespace {

using nlohmann::json;
using ok::generate::Graph;
using ok::generate::Plan;
using ok::generate::Proposal;
using ok::generate::StepKind;
using ok::testing::kSkills;
using ok::testing::must;
using ok::testing::run;

const ok::generate::Skills& skills() {
  static const ok::generate::Skills s = [] {
    auto r = ok::generate::load_skills(kSkills);
    if (!r) throw std::runtime_error(r.error().message);
    return *r;
  }();
  return s;
}

using ok::testing::node;

json ir(json inputs, json nodes, const std::string& out, json attrs = json::array()) {
  return {{"traceable", true},
          {"inputs", inputs},
          {"attrs", attrs},
          {"nodes", nodes},
          {"outputs", json::array({{{"node", out}}})}};
}

json input(const std::string& name, json shape, int index = 0) {
  return {{"name", name}, {"index", index}, {"shape", shape}, {"dtype", "float32"}};
}

Graph lowered(const json& j) {
  auto r = ok::generate::lower(j, skills());
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  if (!r) return {};
  EXPECT_EQ(r->unsupported, "");
  return r->graph;
}

Plan planned(const Graph& g) {
  auto p = ok::generate::make_plan(g, skills());
  EXPECT_EQ(p.unsupported, "");
  return p.plan;
}

// x [rows, cols] summed over dim 1 (or over everything when rows == 0).
json sum_of(int64_t rows, int64_t cols, bool all) {
  const json x = {{"input", "x"}};
  json kwargs = {{"dim", all ? json(nullptr) : json::array({1})}, {"keepdim", false}};
  json shape = all ? json::array() : json::array({rows});
  return ir(json::array({input("x", {rows, cols})}),
            json::array({node("s", "sum", {x}, shape, kwargs)}), "s");
}

TEST(GenerateSplit, FewLongRowsAreSplitIntoPartialsAndAFinish) {
  Graph g = lowered(sum_of(64, 8192, true));
  // One row of 524288: a split aims at 1024 programs but leaves each partial 4096 elements.
  EXPECT_EQ(ok::generate::split_options(g), (std::vector<int64_t>{128, 32, 1}))
      << "no more partials than leave each 4096 elements";
  EXPECT_EQ(ok::generate::split_options(lowered(sum_of(2, 1024 * 8192, false))),
            (std::vector<int64_t>{512, 128, 2048, 1}))
      << "two long rows: 512 partials each, a quarter and four times that, no split";
  Plan p = planned(ok::generate::split_reductions(g, 128));
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.groups[0].outer, 128);
  EXPECT_EQ(p.groups[0].red, 4096);
  EXPECT_EQ(p.groups[1].outer, 1);
  EXPECT_EQ(p.groups[1].red, 128);
  // A split count that does not divide R uses the largest divisor below it.
  Graph odd = lowered(sum_of(27, 729, true));  // 3^9 elements
  Plan q = planned(ok::generate::split_reductions(odd, 16));
  ASSERT_EQ(q.groups.size(), 2u);
  EXPECT_EQ(q.groups[0].outer, 3);
  EXPECT_EQ(q.groups[1].red, 3);
  // Split count 1: the graph as it was, one program per row.
  EXPECT_EQ(planned(ok::generate::split_reductions(g, 1)).groups.size(), 1u);
}

TEST(GenerateSplit, ManyOrShortRowsAreNotSplit) {
  EXPECT_TRUE(ok::generate::split_options(lowered(sum_of(4096, 8192, false))).empty());
  EXPECT_TRUE(ok::generate::split_options(lowered(sum_of(1, 4096, true))).empty());
}

TEST(GenerateSplit, EachOfferedCountSplitsAndNoTwoAlike) {
  // R = 2 x 65537 (prime): the counts 32 and 8 both split it in 2, once; a prime R not at all.
  EXPECT_EQ(ok::generate::split_options(lowered(sum_of(2, 65537, true))),
            (std::vector<int64_t>{2, 1}));
  EXPECT_TRUE(ok::generate::split_options(lowered(sum_of(1, 65537, true))).empty());
  Proposal prime = must(sum_of(1, 65537, true), "cpu", 0, 0);
  ASSERT_TRUE(prime.supported) << prime.reason;
  for (const auto& c : prime.candidates) EXPECT_FALSE(c.params.contains("plan"));
  // R = 3^9: the count 4 takes effect as 3, and is offered as 3.
  EXPECT_EQ(ok::generate::split_options(lowered(sum_of(27, 729, true))),
            (std::vector<int64_t>{3, 1}));
}

TEST(GenerateSplit, TheSplitIsAnAxisOfTheCandidates) {
  // x / ||x||: the norm split in two kernels, then the pointwise division.
  const json x = {{"input", "x"}};
  json j = ir(json::array({input("x", {16, 4096})}),
              json::array({node("n", "norm", {x}, json::array(), {{"dim", nullptr}, {"p", "fro"}}),
                           node("y", "div", {x, {{"node", "n"}}}, {16, 4096})}),
              "y");
  for (const char* backend : {"cpu", "triton", "cuda"}) {
    Proposal p = must(j, backend, 0, 0);
    ASSERT_TRUE(p.supported) << p.reason;
    EXPECT_EQ(p.pattern, "row:norm") << "the pattern of the graph as written";
    EXPECT_NE(p.candidates.front().description.find("pointwise over 65536"), std::string::npos);
    std::set<int64_t> splits;
    for (const auto& c : p.candidates)
      splits.insert(c.params.at("plan").at("split").get<int64_t>());
    EXPECT_EQ(splits, (std::set<int64_t>{16, 4, 1})) << backend;
    EXPECT_EQ(p.candidates.front().params["plan"]["split"], 16);
  }
  Proposal plain = must(sum_of(4096, 8192, false), "cpu");
  EXPECT_FALSE(plain.candidates.front().params.contains("plan")) << "nothing to split";
}

json norm_ir(const std::string& op, json kwargs, bool affine) {
  const json x = {{"input", "x"}};
  const json none = {{"value", nullptr}};
  json attrs = json::array();
  json args = {x, none, none};
  if (affine) {
    for (const char* a : {"w", "b", "rm", "rv"})
      attrs.push_back({{"name", a}, {"shape", {4}}, {"dtype", "float32"}, {"kind", "parameter"}});
    args = {x, {{"attr", "w"}}, {{"attr", "b"}}, {{"attr", "rm"}}, {{"attr", "rv"}}};
    if (op != "batch_norm") args = {x, {{"attr", "w"}}, {{"attr", "b"}}};
  }
  return ir(json::array({input("x", {2, 4, 3, 5})}),
            json::array({node("y", op, args, {2, 4, 3, 5}, kwargs)}), "y", attrs);
}

TEST(GenerateNorm, EachNormIsReductionsOverContiguousDims) {
  auto kernels = [](const Plan& p) {
    std::vector<std::string> out;
    for (const auto& s : p.steps)
      if (s.kind == StepKind::kKernel) out.push_back(p.groups[s.group].pattern);
    return out;
  };
  // InstanceNorm and GroupNorm: one row group over [N, C, HW] / [N, G, C/G * HW].
  Plan in = planned(lowered(norm_ir("instance_norm", {{"eps", 1e-5}}, false)));
  ASSERT_EQ(kernels(in), std::vector<std::string>{"row:instance_norm"});
  EXPECT_EQ(in.groups[0].outer, 8);
  EXPECT_EQ(in.groups[0].red, 15);
  Plan gn = planned(lowered(norm_ir("group_norm", {{"eps", 1e-5}, {"num_groups", 2}}, true)));
  ASSERT_EQ(kernels(gn), std::vector<std::string>{"row:group_norm"});
  EXPECT_EQ(gn.groups[0].red, 30);
  // BatchNorm in eval mode: running statistics, pointwise; in training mode: per-channel sums
  // over the spatial dims, then over the batch.
  Plan eval = planned(lowered(norm_ir("batch_norm", {{"eps", 1e-5}, {"training", false}}, true)));
  for (const auto& G : eval.groups) EXPECT_FALSE(G.row);
  Plan train = planned(lowered(norm_ir("batch_norm", {{"eps", 1e-5}, {"training", true}}, true)));
  ASSERT_GE(train.groups.size(), 4u);
  EXPECT_EQ(train.groups[0].red, 15);
  EXPECT_EQ(train.groups[1].red, 2);
  EXPECT_EQ(train.groups[1].inner, 4);
}

TEST(GenerateNorm, BadGroupsAndRanksSayWhy) {
  auto why = [](const json& j) {
    auto r = ok::generate::lower(j, skills());
    return r ? r->unsupported : r.error().message;
  };
  EXPECT_EQ(why(norm_ir("group_norm", {{"num_groups", 3}}, false)),
            "node y: 3 groups of 4 channels");
  json flat = norm_ir("instance_norm", json::object(), false);
  flat["inputs"][0]["shape"] = {8};
  flat["nodes"][0]["shape"] = {8};
  EXPECT_EQ(why(flat), "node y: instance_norm of a tensor of rank 1");
}

TEST(GenerateLoss, EveryLossGeneratesOnEveryBackend) {
  const json a = {{"input", "a"}}, b = {{"input", "b"}}, c = {{"input", "c"}};
  const json inputs =
      json::array({input("a", {8, 16}, 0), input("b", {8, 16}, 1), input("c", {8, 16}, 2)});
  const std::vector<std::pair<std::string, json>> losses = {
      {"mse_loss", {{"reduction", "mean"}}},
      {"l1_loss", {{"reduction", "sum"}}},
      {"smooth_l1_loss", {{"reduction", "mean"}, {"beta", 0.5}}},
      {"huber_loss", {{"reduction", "mean"}, {"delta", 2.0}}},
      {"kl_div", {{"reduction", "batchmean"}, {"log_target", false}}},
      {"triplet_margin_loss", {{"reduction", "mean"}, {"margin", 1.0}, {"p", 2.0}}}};
  for (const auto& [op, kwargs] : losses) {
    json args = op == "triplet_margin_loss" ? json{a, b, c} : json{a, b};
    json j = ir(inputs, json::array({node("y", op, args, json::array(), kwargs)}), "y");
    for (const char* backend : {"cpu", "triton", "cuda"}) {
      Proposal p = must(j, backend);
      EXPECT_TRUE(p.supported) << op << " " << backend << ": " << p.reason;
      ASSERT_FALSE(p.candidates.empty());
      EXPECT_EQ(p.candidates[0].source.find("torch.nn.functional"), std::string::npos) << op;
    }
  }
  json none = ir(
      inputs, json::array({node("y", "mse_loss", {a, b}, {8, 16}, {{"reduction", "none"}})}), "y");
  EXPECT_EQ(must(none, "cpu").pattern, "pointwise");
  json bad =
      ir(inputs,
         json::array({node("y", "mse_loss", {a, b}, json::array(), {{"reduction", "max"}})}), "y");
  EXPECT_EQ(must(bad, "cpu").reason, "node y: mse_loss with reduction=max");
  // A tensor argument the lowering would not read (a weight=) is unsupported, not dropped.
  json weighted = ir(inputs, json::array({node("y", "mse_loss", {a, b, c}, json::array())}), "y");
  EXPECT_EQ(must(weighted, "cpu").reason, "node y: mse_loss with 3 tensor arguments, not 2");
  json triplet4 =
      ir(inputs, json::array({node("y", "triplet_margin_loss", {a, b, c, a}, json::array())}), "y");
  EXPECT_EQ(must(triplet4, "cpu").reason,
            "node y: triplet_margin_loss with 4 tensor arguments, not 3");
}

// cross_entropy: x [8, 16] (or [4, 16, 3], classes along dim 1) with int64 class indices.
json cross_entropy_ir(json x_shape, json t_shape, json out_shape, json kwargs,
                      const std::string& tdtype = "int64") {
  json t = input("t", t_shape, 1);
  t["dtype"] = tdtype;
  return ir(json::array({input("x", x_shape, 0), t}),
            json::array({node("y", "cross_entropy", {{{"input", "x"}}, {{"input", "t"}}}, out_shape,
                              kwargs)}),
            "y");
}

TEST(GenerateLoss, CrossEntropyPicksTheTargetColumnInTheRowKernel) {
  const json mean = {{"ignore_index", -100}, {"reduction", "mean"}, {"label_smoothing", 0.0}};
  const json j = cross_entropy_ir({8, 16}, {8}, json::array(), mean);
  Plan p = planned(lowered(j));
  // The row kernel (max, sum of exp, picked logit over the 16 classes), then the mean over the
  // rows that are not ignored (two sums in one kernel, the division).
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.groups[0].red, 16);
  EXPECT_EQ(p.groups[0].outer, 8);
  EXPECT_EQ(p.groups[1].red, 8);
  // The column index is the reduced coordinate r; the target is read as int64.
  const std::map<std::string, std::vector<std::string>> expect = {
      {"cpu", {"const int64_t* __restrict__ in", "r == in"}},
      {"cuda", {"const int64_t* __restrict__ in", "r == in"}},
      {"triton", {"tl.where(r == x"}}};
  for (const auto& [backend, needles] : expect) {
    Proposal prop = must(j, backend);
    ASSERT_TRUE(prop.supported) << backend << ": " << prop.reason;
    EXPECT_EQ(prop.pattern, "reduce:cross_entropy") << backend;
    ASSERT_FALSE(prop.candidates.empty());
    for (const auto& needle : needles)
      EXPECT_NE(prop.candidates[0].source.find(needle), std::string::npos)
          << backend << " lacks " << needle << "\n"
          << prop.candidates[0].source;
  }
  // Many rows (level1/95 has 32768): the mean's two sums are split like any long reduction.
  Graph many = lowered(cross_entropy_ir({32768, 16}, {32768}, json::array(), mean));
  const auto splits = ok::generate::split_options(many);
  ASSERT_FALSE(splits.empty());
  EXPECT_EQ(planned(ok::generate::split_reductions(many, splits[0])).groups.size(), 3u);
  // Classes along dim 1 of [N, C, d]: a row kernel over C with the d positions as its inner dim.
  json spatial =
      cross_entropy_ir({4, 16, 3}, {4, 3}, {4, 3}, {{"reduction", "none"}, {"ignore_index", 0}});
  Plan sp = planned(lowered(spatial));
  ASSERT_EQ(sp.groups.size(), 1u);
  EXPECT_EQ(sp.groups[0].inner, 3);
  for (const char* backend : {"cpu", "triton", "cuda"})
    EXPECT_TRUE(must(spatial, backend).supported) << backend;
}

// The row kernel with the int64 target (1-d rows and, for [N, C, d], 2-d tiles) as Triton parses
// it and nvcc compiles it.
TEST(GenerateLoss, CrossEntropyKernelsParseAndCompile) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ok_xent_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::vector<json> irs = {
      cross_entropy_ir({8, 16}, {8}, json::array(), {{"reduction", "mean"}}),
      cross_entropy_ir({4, 16, 3}, {4, 3}, {4, 3}, {{"reduction", "none"}})};
  const bool python = run("/usr/bin/python3 -c pass >/dev/null 2>&1") == 0;
  const bool nvcc = run("nvcc --version >/dev/null 2>&1") == 0;
  for (size_t k = 0; k < irs.size(); ++k) {
    const fs::path py = dir / fmt::format("xent{}.py", k);
    if (python) {
      std::ofstream(py) << must(irs[k], "triton", 0, 1).candidates.at(0).source;
      EXPECT_EQ(run("/usr/bin/python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' " +
                    py.string()),
                0)
          << k;
    }
    if (nvcc)
      EXPECT_EQ(ok::testing::nvcc_compile(must(irs[k], "cuda", 0, 1).candidates.at(0).source,
                                          dir / fmt::format("xent{}", k)),
                0)
          << k;
  }
  fs::remove_all(dir);
  if (!python || !nvcc) GTEST_SKIP() << "no /usr/bin/python3 or no nvcc on PATH";
}

TEST(GenerateLoss, CrossEntropyOptionsWeDoNotModelSayWhy) {
  auto why = [](const json& j) { return must(j, "cpu").reason; };
  json smoothing = cross_entropy_ir({8, 16}, {8}, json::array(), {{"label_smoothing", 0.1}});
  EXPECT_EQ(why(smoothing), "node y: cross_entropy with label_smoothing");
  json weighted = cross_entropy_ir({8, 16}, {8}, json::array(), json::object());
  weighted["inputs"].push_back(input("w", {16}, 2));
  weighted["nodes"][0]["args"].push_back({{"input", "w"}});
  EXPECT_EQ(why(weighted), "node y: cross_entropy with class weights (weight=)");
  json probabilities = cross_entropy_ir({8, 16}, {8, 16}, json::array(), json::object(), "float32");
  EXPECT_EQ(why(probabilities),
            "node y: cross_entropy with float32 targets (class probabilities); only class "
            "indices are generated");
  json batchmean = cross_entropy_ir({8, 16}, {8}, json::array(), {{"reduction", "batchmean"}});
  EXPECT_EQ(why(batchmean), "node y: cross_entropy with reduction=batchmean");
}

}  // namespace
