#include "generate/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "generate/emit.hpp"

namespace ok::generate {

namespace {

Shape strip_leading_ones(const Shape& s) {
  size_t k = 0;
  while (k < s.size() && s[k] == 1) ++k;
  return Shape(s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
}

// s padded with leading ones to `rank` (s must not be longer than rank unless its extra dims are
// 1).
Shape pad_to(const Shape& s, size_t rank) {
  Shape t = s;
  while (t.size() > rank && t.front() == 1) t.erase(t.begin());
  while (t.size() < rank) t.insert(t.begin(), 1);
  return t;
}

struct View {
  int64_t outer = 1, red = 1, inner = 1;
  int begin = 0, end = 0;
};

View view_of(const Shape& s, const std::vector<int>& dims) {
  View v;
  v.begin = dims.front();
  v.end = dims.back() + 1;
  for (int d = 0; d < static_cast<int>(s.size()); ++d) {
    if (d < v.begin)
      v.outer *= s[d];
    else if (d < v.end)
      v.red *= s[d];
    else
      v.inner *= s[d];
  }
  return v;
}

// Whether `small` broadcasts to `ctx` (right-aligned, each dim equal or 1).
bool broadcasts_to(const Shape& small, const Shape& ctx) {
  const Shape s = strip_leading_ones(small);
  if (s.size() > ctx.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t d = s[s.size() - 1 - i], c = ctx[ctx.size() - 1 - i];
    if (d != 1 && d != c) return false;
  }
  return true;
}

class Planner {
 public:
  Planner(const Graph& g, const Skills& skills, bool inline_broadcast, std::string backend)
      : g_(g), skills_(skills), inline_broadcast_(inline_broadcast), backend_(std::move(backend)) {}

  // A value computed inline at a broadcast shape that something outside its group reads (it would
  // have to be stored at its own shape): plan again without inlining. Known after run().
  bool broadcast_escaped() const { return escaped_; }

  Planned run() {
    mark_live();
    for (int ni = 0; ni < static_cast<int>(g_.nodes.size()); ++ni) {
      const Node& n = g_.nodes[ni];
      if (!live_[ni]) continue;
      if (n.kind == NodeKind::kView && n.op != "reshape") {
        return Planned{{},
                       fmt::format("node {}: {} ({}) is generated only as an operand of a matrix "
                                   "product",
                                   g_.values[n.out].name, n.op, n.origin)};
      }
      if (auto why = bool_operand(n); !why.empty()) return Planned{{}, why};
      if (is_window_step(n)) {
        if (auto why = window_unsupported(g_, n); !why.empty()) return Planned{{}, why};
        close();
        plan_.steps.push_back(Step{StepKind::kWindow, ni, -1});
        continue;
      }
      if (n.kind == NodeKind::kGemm) {
        close();
        plan_.steps.push_back(Step{StepKind::kGemm, ni, -1});
        continue;
      }
      if (n.kind == NodeKind::kConv) {
        close();
        plan_.steps.push_back(Step{StepKind::kConv, ni, -1});
        continue;
      }
      if (n.kind == NodeKind::kVendor) {
        close();
        plan_.steps.push_back(Step{StepKind::kVendor, ni, -1});
        continue;
      }
      // A view of a value computed inline (KernelGroup::broadcast) is a step of its own: the value
      // is then read outside its group, so make_plan plans again without inlining.
      if (n.kind == NodeKind::kView &&
          !(open_ && cur_.produces(n.args[0].value) && !cur_.broadcast.contains(n.args[0].value))) {
        plan_.steps.push_back(Step{StepKind::kView, ni, -1});
        continue;
      }
      if (open_ && try_add(cur_, ni)) continue;
      close();
      cur_ = KernelGroup{};
      open_ = true;
      if (!try_add(cur_, ni)) return fail(ni);
    }
    close();
    finish();
    for (const auto& G : plan_.groups)
      for (int v : G.outputs) escaped_ = escaped_ || G.broadcast.contains(v);
    return Planned{std::move(plan_), reason_};
  }

 private:
  // live_[i]: node i's value reaches the graph's output.
  void mark_live() {
    live_.assign(g_.nodes.size(), false);
    std::vector<bool> needed(g_.values.size(), false);
    if (g_.output >= 0) needed[g_.output] = true;
    for (int ni = static_cast<int>(g_.nodes.size()) - 1; ni >= 0; --ni) {
      const Node& n = g_.nodes[ni];
      if (!needed[n.out]) continue;
      live_[ni] = true;
      for (const auto& a : n.args)
        if (a.value >= 0) needed[a.value] = true;
    }
  }

  // A bool tensor is read only as a scan's mask (args[1] of a masked scan).
  std::string bool_operand(const Node& n) const {
    for (size_t i = 0; i < n.args.size(); ++i) {
      const Operand& a = n.args[i];
      if (a.is_scalar() || g_.values[a.value].dtype != "bool") continue;
      if (n.kind == NodeKind::kWindow && n.window.masked && i == 1) continue;
      return fmt::format(
          "node {} ({}) reads the bool tensor {}; bool tensors are generated only "
          "as the mask of a scan (cumsum(x * mask))",
          g_.values[n.out].name, n.origin, g_.values[a.value].name);
    }
    return "";
  }

  Planned fail(int ni) {
    const Node& n = g_.nodes[ni];
    return Planned{
        {},
        reason_.empty()
            ? fmt::format("node {} ({} from {}, shape {}) does not fit a kernel group",
                          g_.values[n.out].name, n.op, n.origin, shape_str(g_.values[n.out].shape))
            : reason_};
  }

  void close() {
    if (!open_) return;
    open_ = false;
    if (cur_.nodes.empty()) return;
    plan_.groups.push_back(std::move(cur_));
    plan_.steps.push_back(Step{StepKind::kKernel, -1, static_cast<int>(plan_.groups.size()) - 1});
  }

  // Adds node ni to G when it fits; G is unchanged otherwise.
  bool try_add(KernelGroup& G, int ni) {
    const Node& n = g_.nodes[ni];
    const Value& out = g_.values[n.out];
    if (n.kind == NodeKind::kReduce) {
      if (!G.broadcast.empty()) return false;
      if (n.reduce == ReduceKind::kArgmax || n.reduce == ReduceKind::kArgmin) {
        reason_ = fmt::format("node {}: {} reductions are not generated yet", out.name, n.op);
        return false;
      }
      const Operand& x = n.args[0];
      const Shape& xs = g_.values[x.value].shape;
      View v = view_of(xs, n.dims);
      bool inside = G.produces(x.value);
      if (inside && G.cls[x.value] != Cls::kRow) return false;
      if (G.nodes.empty()) {
        G.full = numel(xs);
      } else if (numel(xs) != G.full) {
        return false;
      }
      if (G.row) {
        if (v.outer != G.outer || v.red != G.red || v.inner != G.inner) return false;
      } else {
        G.row = true;
        G.base = xs;
        G.outer = v.outer;
        G.red = v.red;
        G.inner = v.inner;
        G.red_begin = v.begin;
        G.red_end = v.end;
      }
      add(G, ni, Cls::kPerRow);
      return true;
    }
    if (n.kind == NodeKind::kView) {
      const auto arg = G.cls.find(n.args[0].value);
      if (arg == G.cls.end() || G.broadcast.contains(n.args[0].value)) return false;
      add(G, ni, arg->second);
      return true;
    }
    // Elementwise.
    int64_t m = numel(out.shape);
    if (G.nodes.empty()) {
      G.full = m;
      G.base = out.shape;
      add(G, ni, Cls::kRow);
      return true;
    }
    bool any_row = false, any_perrow = false;
    for (const auto& a : n.args) {
      if (a.is_scalar() || !G.produces(a.value)) continue;
      (G.cls[a.value] == Cls::kRow ? any_row : any_perrow) = true;
    }
    if (!G.row && m < G.full && add_broadcast(G, ni)) return true;
    if (m == G.full && !reads_broadcast(G, ni)) return false;
    if (m == G.full && (!G.row || G.red != 1 || any_row || !any_perrow)) {
      if (any_perrow) {
        // A per-row value broadcast back over its row: must line up with the reduced view.
        if (!G.row || strip_leading_ones(out.shape) != strip_leading_ones(G.base)) return false;
        Shape keep = G.base;
        for (int d = G.red_begin; d < G.red_end; ++d) keep[d] = 1;
        for (const auto& a : n.args) {
          if (a.is_scalar() || !G.produces(a.value) || G.cls[a.value] != Cls::kPerRow) continue;
          if (pad_to(g_.values[a.value].shape, G.base.size()) != keep) return false;
        }
      }
      add(G, ni, Cls::kRow);
      return true;
    }
    if (G.row && m == G.outer * G.inner && !any_row) {
      add(G, ni, Cls::kPerRow);
      return true;
    }
    return false;
  }

  // A node of fewer elements than the pointwise group G, computed inline (KernelGroup::broadcast):
  // its tensor operands come from outside G or are such values.
  bool add_broadcast(KernelGroup& G, int ni) {
    const Node& n = g_.nodes[ni];
    if (!inline_broadcast_ || G.nodes.empty() || numel(g_.values[n.out].shape) == 0) return false;
    for (const auto& a : n.args)
      if (!a.is_scalar() && G.produces(a.value) && !G.broadcast.contains(a.value)) return false;
    add(G, ni, Cls::kRow);
    G.broadcast[n.out] = {};  // its shape is known from its first full-size reader
    return true;
  }

  // Whether full-size node ni may read G's broadcast values: each broadcasts to ni's shape, and
  // it and every broadcast value it reads, however deep, keeps it (the shape of its first reader,
  // up to leading ones: the value's expression is indexed once); sets the shape of those not read
  // yet.
  bool reads_broadcast(KernelGroup& G, int ni) {
    const Shape& ctx = g_.values[g_.nodes[ni].out].shape;
    std::vector<int> todo, closure;
    for (const auto& a : g_.nodes[ni].args) {
      if (a.is_scalar() || !G.broadcast.contains(a.value)) continue;
      if (!broadcasts_to(g_.values[a.value].shape, ctx)) return false;
      todo.push_back(a.value);
    }
    while (!todo.empty()) {
      const int v = todo.back();
      todo.pop_back();
      if (std::find(closure.begin(), closure.end(), v) != closure.end()) continue;
      const Shape& known = G.broadcast.at(v);
      if (!known.empty() && strip_leading_ones(known) != strip_leading_ones(ctx)) return false;
      closure.push_back(v);
      for (const auto& a : g_.nodes[g_.values[v].producer].args)
        if (!a.is_scalar() && G.broadcast.contains(a.value)) todo.push_back(a.value);
    }
    for (int v : closure)
      if (G.broadcast.at(v).empty()) G.broadcast[v] = ctx;
    return true;
  }

  void add(KernelGroup& G, int ni, Cls c) {
    const Node& n = g_.nodes[ni];
    G.nodes.push_back(ni);
    G.cls[n.out] = c;
    for (const auto& a : n.args) {
      if (a.value < 0 || G.produces(a.value)) continue;
      if (std::find(G.leaves.begin(), G.leaves.end(), a.value) == G.leaves.end())
        G.leaves.push_back(a.value);
    }
    if (n.kind == NodeKind::kElementwise) {
      auto it = skills_.ops.find(n.op);
      if (it != skills_.ops.end() && it->second.transcendental) G.has_transcendental = true;
    }
  }

  // Outputs, levels and patterns, once every group is known.
  void finish() {
    std::set<int> used_outside;
    std::vector<int> group_of(g_.values.size(), -1);
    for (int gi = 0; gi < static_cast<int>(plan_.groups.size()); ++gi)
      for (const auto& [v, c] : plan_.groups[gi].cls) group_of[v] = gi;
    for (size_t ni = 0; ni < g_.nodes.size(); ++ni) {
      if (!live_[ni]) continue;
      const Node& n = g_.nodes[ni];
      int gi = group_of[n.out];
      for (const auto& a : n.args)
        if (a.value >= 0 && group_of[a.value] >= 0 && group_of[a.value] != gi)
          used_outside.insert(a.value);
    }
    if (g_.output >= 0 && group_of[g_.output] >= 0) used_outside.insert(g_.output);
    for (auto& G : plan_.groups) {
      for (int ni : G.nodes)
        if (used_outside.contains(g_.nodes[ni].out)) G.outputs.push_back(g_.nodes[ni].out);
      levels(G);
      online_pairs(G);
      G.pattern = pattern_of(G);
    }
    fuse_epilogues();
    std::vector<std::string> parts;
    for (const auto& s : plan_.steps) {
      std::string p = s.kind == StepKind::kVendor   ? "vendor"
                      : s.kind == StepKind::kKernel ? plan_.groups[s.group].pattern
                      : s.kind == StepKind::kGemm   ? gemm_pattern(g_.nodes[s.node].gemm)
                      : s.kind == StepKind::kConv   ? conv_pattern(g_.nodes[s.node].conv)
                      : s.kind == StepKind::kWindow ? window_pattern(g_.nodes[s.node])
                                                    : "";
      if (s.epilogue >= 0 && plan_.groups[s.epilogue].row)
        p += ":epilogue[" + plan_.groups[s.epilogue].pattern + "]";
      else if (s.epilogue >= 0)
        p += ":epilogue";
      if (p.empty() || (!parts.empty() && parts.back() == p)) continue;
      parts.push_back(p);
    }
    if (parts.empty()) parts.push_back("view");
    for (size_t i = 0; i < parts.size(); ++i) plan_.pattern += (i ? "+" : "") + parts[i];
  }

  // The level-2 rule: a pointwise group right after a GEMM or convolution step runs in that
  // kernel's epilogue when (1) the product has no kept triangle, (2) its output is read by this
  // group alone (not by a later step, not the graph's output: otherwise it must be stored),
  // element for element (every reader's shape is the output's, up to leading ones, and the group
  // has its element count), and (3) the group's other leaves are float32 and exist before the
  // product runs (inputs, attrs, earlier steps' values).
  void fuse_epilogues() {
    std::vector<Step> kept;
    for (const Step& s : plan_.steps) {
      // The product step before this one, past the views between them (of other values: a view
      // of the product would be a second reader); those views then move before the product.
      size_t at = kept.size();
      while (at > 0 && kept[at - 1].kind == StepKind::kView) --at;
      if (s.kind == StepKind::kKernel && at > 0 &&
          (fusible(kept[at - 1], s.group) || row_fusible(kept[at - 1], s.group))) {
        Step product = kept[at - 1];
        if (plan_.groups[s.group].row) row_n_ = g_.nodes[product.node].gemm.n;
        product.epilogue = s.group;
        plan_.groups[s.group].fused_into = product.node;
        kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(at) - 1);
        kept.push_back(product);
        continue;
      }
      kept.push_back(s);
    }
    plan_.steps = std::move(kept);
  }

  // Whether value v exists before node `before` runs: not computed, computed earlier, or a view of
  // such a value.
  bool available_before(int v, int before) const {
    const Value& val = g_.values[v];
    if (val.kind != ValueKind::kNode || val.producer < before) return true;
    const Node& p = g_.nodes[val.producer];
    return p.kind == NodeKind::kView && p.args[0].value >= 0 &&
           available_before(p.args[0].value, before);
  }

  bool fusible(const Step& prev, int gi) const {
    if ((prev.kind != StepKind::kGemm && prev.kind != StepKind::kConv) || prev.epilogue >= 0)
      return false;
    const Node& p = g_.nodes[prev.node];
    if (prev.kind == StepKind::kGemm && p.gemm.triangle != Triangle::kNone) return false;
    const KernelGroup& G = plan_.groups[gi];
    const int c = p.out;
    if (G.row || G.outputs.empty() || c == g_.output || G.full != numel(g_.values[c].shape))
      return false;
    return reads_alone(G, prev.node);
  }

  // Conditions (2) and (3) of fuse_epilogues on group G and product node `pn`: G reads the
  // product's value, nothing else does, every reader has its shape (up to leading ones; in a row
  // group a reduction over the rows may read it too: the epilogue holds whole rows), and G's other
  // leaves are float32 and exist before the product runs.
  bool reads_alone(const KernelGroup& G, int pn) const {
    const int c = g_.nodes[pn].out;
    const Shape cs = strip_leading_ones(g_.values[c].shape);
    if (std::find(G.leaves.begin(), G.leaves.end(), c) == G.leaves.end()) return false;
    for (int v : G.leaves) {
      if (v == c) continue;
      const Value& val = g_.values[v];
      if (val.dtype != "float32" || !available_before(v, pn)) return false;
    }
    for (size_t ni = 0; ni < g_.nodes.size(); ++ni) {
      if (!live_[ni]) continue;
      const Node& n = g_.nodes[ni];
      for (const auto& a : n.args) {
        if (a.value != c) continue;
        if (!G.produces(n.out)) return false;  // read elsewhere: it must be stored
        if (G.row && n.kind == NodeKind::kReduce) continue;
        if (strip_leading_ones(g_.values[n.out].shape) != cs) return false;
      }
    }
    return true;
  }

  // The row epilogue: a row group right after a GEMM runs in its epilogue when its rows are
  // segments of the product's rows (no inner extent, R dividing N: softmax, a row reduction, a
  // LayerNorm over the row, a GroupNorm whose groups lie inside it), the conditions of
  // fuse_epilogues hold, and the backend's template holds a whole row of N in one program
  // (row_epilogue_fits).
  bool row_fusible(const Step& prev, int gi) const {
    if (prev.kind != StepKind::kGemm || prev.epilogue >= 0) return false;
    const Node& p = g_.nodes[prev.node];
    const KernelGroup& G = plan_.groups[gi];
    if (p.gemm.triangle != Triangle::kNone || !G.row || G.outputs.empty() || p.out == g_.output)
      return false;
    if (G.inner != 1 || G.full != numel(g_.values[p.out].shape) || p.gemm.n % G.red != 0)
      return false;
    // The plan's GEMMs share one point: Triton's BLOCK_N is the first row epilogue's N.
    if (backend_ == "triton" && row_n_ > 0 && p.gemm.n != row_n_) return false;
    return row_epilogue_fits(backend_, p.gemm.n, G.red) && reads_alone(G, prev.node);
  }

  void levels(KernelGroup& G) {
    // need[v]: the highest per-row level a kRow value depends on (-1: none).
    std::map<int, int> need;
    for (int ni : G.nodes) {
      const Node& n = g_.nodes[ni];
      int lvl = -1;
      for (const auto& a : n.args) {
        if (a.value < 0 || !G.produces(a.value)) continue;
        lvl = std::max(lvl, G.cls[a.value] == Cls::kRow ? need[a.value] : G.plevel[a.value]);
      }
      if (n.kind == NodeKind::kReduce) {
        G.level[n.out] = lvl + 1;
        G.plevel[n.out] = lvl + 1;
        G.passes = std::max(G.passes, lvl + 2);
      } else if (G.cls[n.out] == Cls::kPerRow) {
        G.plevel[n.out] = lvl;
      } else {
        need[n.out] = lvl;
      }
    }
  }

  // The online pairs of a row group (KernelGroup::online): sum(exp(sub(Y, T))) one level after
  // M = amax(Y), with T = M or select(cond, M, number) (logsumexp's shift: M where finite). The
  // kernels rescale the running sum by exp(M - T) after the pass where T is not M, and make it
  // NaN where T is an infinite M (as exp(x - T) makes the two-pass sum), whatever the condition.
  void online_pairs(KernelGroup& G) const {
    auto producer = [&](int v, const char* op) -> const Node* {
      if (v < 0 || !G.produces(v)) return nullptr;
      const Node& n = g_.nodes[g_.values[v].producer];
      return n.kind == NodeKind::kElementwise && n.op == op ? &n : nullptr;
    };
    for (int ni : G.nodes) {
      const Node& s = g_.nodes[ni];
      if (s.kind != NodeKind::kReduce || s.reduce != ReduceKind::kSum) continue;
      const Node* e = producer(s.args[0].value, "exp");
      const Node* d = e && e->args.size() == 1 ? producer(e->args[0].value, "sub") : nullptr;
      if (!d || d->args.size() != 2 || d->args[0].value < 0 || d->args[1].value < 0) continue;
      const int y = d->args[0].value, t = d->args[1].value;
      if (G.cls.at(d->out) != Cls::kRow || !G.produces(t) || G.cls.at(t) != Cls::kPerRow) continue;
      int m = t;
      if (const Node* sel = producer(t, "select");
          sel && sel->args.size() == 3 && sel->args[1].value >= 0 && sel->args[2].value < 0)
        m = sel->args[1].value;
      if (!G.level.contains(m)) continue;
      const Node& mx = g_.nodes[g_.values[m].producer];
      if (mx.reduce != ReduceKind::kMax || mx.args[0].value != y || mx.dims != s.dims ||
          G.level.at(m) + 1 != G.level.at(s.out))
        continue;
      G.online[s.out] = {m, y, t};
    }
  }

  std::string pattern_of(const KernelGroup& G) {
    if (!G.row) return "pointwise";
    static const std::set<std::string> kRowOps = {
        "softmax", "log_softmax", "layer_norm", "sum",  "mean",   "amax", "amin",
        "prod",    "var",         "std",        "norm", "matmul", "mm",   "bmm"};
    // Reductions written as the row kernels' steps (lower_reduce.cpp, lower_window.cpp).
    static const std::set<std::string> kRowLowered = {"logsumexp", "adaptive_avg_pool",
                                                      "adaptive_max_pool"};
    // The norm family and the losses (lower_norm.cpp).
    static const std::set<std::string> kNormOps = {
        "batch_norm",   "instance_norm", "group_norm",
        "mse_loss",     "l1_loss",       "smooth_l1_loss",
        "huber_loss",   "kl_div",        "triplet_margin_loss",
        "cross_entropy"};
    std::vector<std::string> ops;
    for (int ni : G.nodes) {
      const std::string& o = g_.nodes[ni].origin;
      if ((kRowOps.contains(o) || kRowLowered.contains(o) || kNormOps.contains(o)) &&
          std::find(ops.begin(), ops.end(), o) == ops.end())
        ops.push_back(o);
    }
    bool row_out = false;
    for (int v : G.outputs)
      if (G.cls.at(v) == Cls::kRow) row_out = true;
    std::string p = row_out ? "row:" : "reduce:";
    for (size_t i = 0; i < ops.size(); ++i) p += (i ? "," : "") + ops[i];
    return p;
  }

  static std::string gemm_pattern(const Gemm& gm) {
    return gm.triangle == Triangle::kLower   ? "gemm:tril"
           : gm.triangle == Triangle::kUpper ? "gemm:triu"
                                             : "gemm";
  }

  static std::string conv_pattern(const Conv& c) {
    return c.transposed ? "conv:transposed" : c.depthwise() ? "conv:depthwise" : "conv";
  }

  const Graph& g_;
  const Skills& skills_;
  const bool inline_broadcast_;
  const std::string backend_;
  int64_t row_n_ = 0;  // N of the GEMMs with a row epilogue so far
  bool escaped_ = false;
  std::vector<bool> live_;
  Plan plan_;
  KernelGroup cur_;
  bool open_ = false;
  std::string reason_;
};

}  // namespace

bool row_epilogue_fits(const std::string& backend, int64_t n, int64_t red) {
  if (backend == "cpu" || backend == "cuda") return n <= kLoopedRowEpilogueMax;
  if (backend != "triton" || next_pow2(n) > kTritonRowEpilogueMax) return false;
  // Segments of a row (GroupNorm's groups) are a [BLOCK_M, N / R, R] view of the tile: exact
  // only where N and R are powers of two and the tile is N wide.
  return red == n || (n == next_pow2(n) && red == next_pow2(red) && n >= 32);
}

bool row_epilogue_idles(const Graph& g, const Plan& plan) {
  for (const Step& s : plan.steps) {
    if (s.kind != StepKind::kGemm || s.epilogue < 0 || !plan.groups[s.epilogue].row) continue;
    const Gemm& gm = g.nodes[s.node].gemm;
    if (gm.n > kTritonRowEpilogueMax && gm.batch * gm.m < kIdleRows) return true;
  }
  return false;
}

Planned make_plan(const Graph& g, const Skills& skills, const std::string& backend) {
  Planner inlined(g, skills, true, backend);
  Planned p = inlined.run();
  if (!inlined.broadcast_escaped()) return p;
  return Planner(g, skills, false, backend).run();
}

}  // namespace ok::generate
