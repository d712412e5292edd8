// Split reductions: a reduction whose rows are few and long runs as S partial reductions per row
// (many programs) and a short finishing reduction over the S partials, by rewriting the graph.
#include <fmt/format.h>

#include <algorithm>

#include "generate/emit.hpp"
#include "generate/plan.hpp"

namespace ok::generate {

namespace {

// Below this many programs a row kernel leaves SMs idle (an H200 has 132). A split of a
// normalisation (a row group that writes rows) materialises intermediates, so rows that fill the
// GPU once are better left whole.
constexpr int64_t kFewPrograms = 128;
// The programs a split aims for, and the least work a partial is left with.
constexpr int64_t kTargetPrograms = 1024;
constexpr int64_t kMinPartial = 4096;
// Columns of the kept axis one program of a 2D row kernel covers.
constexpr int64_t kColumnsPerProgram = 64;

struct RowView {
  int64_t outer = 1, red = 1, inner = 1;
};

RowView row_view(const Shape& s, const std::vector<int>& dims) {
  RowView v;
  const int begin = dims.empty() ? 0 : dims.front();
  const int end = dims.empty() ? static_cast<int>(s.size()) : dims.back() + 1;
  for (int d = 0; d < static_cast<int>(s.size()); ++d)
    (d < begin ? v.outer : d < end ? v.red : v.inner) *= s[d];
  return v;
}

int64_t programs(const RowView& v) {
  return v.outer * (v.inner > 1 ? (v.inner + kColumnsPerProgram - 1) / kColumnsPerProgram : 1);
}

bool splittable(const Graph& g, const Node& n) {
  if (n.kind != NodeKind::kReduce || n.reduce == ReduceKind::kArgmax ||
      n.reduce == ReduceKind::kArgmin)
    return false;
  RowView v = row_view(g.values[n.args[0].value].shape, n.dims);
  return programs(v) < kFewPrograms && v.red >= 2 * kMinPartial;
}

// The largest divisor of `red` no larger than `want` that leaves each partial kMinPartial
// elements; 1 when there is none.
int64_t divisor_split(int64_t red, int64_t want) {
  for (int64_t s = std::min(want, red / kMinPartial); s >= 2; --s)
    if (red % s == 0) return s;
  return 1;
}

}  // namespace

std::vector<int64_t> split_options(const Graph& g) {
  int64_t ideal = 0, cap = 0;
  std::vector<int64_t> reds;
  for (const Node& n : g.nodes) {
    if (!splittable(g, n)) continue;
    RowView v = row_view(g.values[n.args[0].value].shape, n.dims);
    int64_t want = next_pow2(kTargetPrograms / std::max<int64_t>(programs(v), 1));
    ideal = std::max(ideal, std::min(want, v.red / kMinPartial));
    cap = std::max(cap, v.red / kMinPartial);
    reds.push_back(v.red);
  }
  if (ideal < 2) return {};
  std::vector<int64_t> wanted{ideal};
  if (ideal / 4 >= 2) wanted.push_back(ideal / 4);
  if (ideal * 4 <= cap) wanted.push_back(ideal * 4);
  // Each count as the split it takes effect as, the largest divisor a reduction uses for it
  // (split_reductions() with that divisor splits every reduction as the count did): a count that
  // divides no reduction is dropped, two that split alike are one.
  std::vector<int64_t> out;
  for (int64_t want : wanted) {
    int64_t s = 1;
    for (int64_t red : reds) s = std::max(s, divisor_split(red, want));
    if (s >= 2 && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  if (out.empty()) return {};
  out.push_back(1);  // no split: one program per row
  return out;
}

Graph split_reductions(const Graph& g, int64_t split) {
  if (split < 2) return g;
  Graph out = g;
  out.nodes.clear();
  auto push = [&out](Node n) {
    out.values[n.out].producer = static_cast<int>(out.nodes.size());
    out.nodes.push_back(std::move(n));
  };
  auto fresh = [&out](Shape shape, const std::string& name) {
    Value v;
    v.name = name;
    v.shape = std::move(shape);
    out.values.push_back(std::move(v));
    return static_cast<int>(out.values.size()) - 1;
  };
  // The split S of node n (1: it stays whole).
  auto split_of = [&](const Node& n) -> int64_t {
    if (!splittable(g, n)) return 1;
    return divisor_split(row_view(g.values[n.args[0].value].shape, n.dims).red, split);
  };
  const std::vector<Node>& nodes = g.nodes;
  for (size_t i = 0; i < nodes.size();) {
    if (split_of(nodes[i]) < 2) {
      push(nodes[i++]);
      continue;
    }
    // A run of adjacent split reductions, none reading another (cross-entropy's sum of losses and
    // count of rows): all their partials, then all their finishes, so that the planner gives
    // the partials one kernel and the finishes another.
    std::vector<int> run_outs;
    std::vector<Node> finishes;
    for (; i < nodes.size() && split_of(nodes[i]) >= 2; ++i) {
      const Node& n = nodes[i];
      if (std::find(run_outs.begin(), run_outs.end(), n.args[0].value) != run_outs.end()) break;
      run_outs.push_back(n.out);
      RowView v = row_view(g.values[n.args[0].value].shape, n.dims);
      const int64_t s = split_of(n);
      const std::string& name = g.values[n.out].name;
      Node view;
      view.kind = NodeKind::kView;
      view.op = "reshape";
      view.origin = n.origin;
      view.args = {n.args[0]};
      view.out = fresh({v.outer, s, v.red / s, v.inner}, name + "_split");
      push(view);
      Node partial = n;
      partial.args = {Operand::tensor(view.out)};
      partial.dims = {2};
      partial.out = fresh({v.outer, s, 1, v.inner}, name + "_partial");
      push(partial);
      Node finish = n;
      finish.args = {Operand::tensor(partial.out)};
      finish.dims = {1};
      finish.out = fresh({v.outer, 1, 1, v.inner}, name + "_total");
      Node back = view;
      back.args = {Operand::tensor(finish.out)};
      back.out = n.out;
      finishes.push_back(std::move(finish));
      finishes.push_back(std::move(back));
    }
    for (Node& f : finishes) push(std::move(f));
  }
  return out;
}

}  // namespace ok::generate
