// The lowering of the "norm" family (batch_norm, instance_norm, group_norm) and the "loss" family
// (mse_loss, l1_loss, smooth_l1_loss, huber_loss, kl_div, triplet_margin_loss, cross_entropy)
// into reductions over contiguous dims, views and elementwise ops.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "generate/lowerer.hpp"

namespace ok::generate::lowering {

namespace {

using nlohmann::json;

Operand t(int v) {
  return Operand::tensor(v);
}
Operand num(double v) {
  return Operand::number(v);
}

// An optional float32 tensor argument: args[pos] unless it is {"value": ...}, else kwargs[key].
std::optional<Operand> optional_tensor(Lowerer& l, const IrNode& n, size_t pos, const char* key) {
  std::optional<Operand> out;
  const json& args = n.json.value("args", json::array());
  if (args.size() > pos && args[pos].is_object() && !args[pos].contains("value")) {
    out = l.operand(args[pos], n.where);
  } else if (n.json.contains("kwargs") && n.json["kwargs"].contains(key)) {
    const json& a = n.json["kwargs"][key];
    if (a.is_object() && !a.contains("value")) out = l.operand(a, n.where);
  }
  if (out) {
    if (out->is_scalar()) throw Unsupported{fmt::format("node {}: {} is a number", n.name, key)};
    l.check_dtype(*out, n.name);
  }
  return out;
}

// x [N, C, spatial...] as [N, C, HW]; Unsupported below rank 2.
struct Channels {
  int64_t n = 1, c = 1, hw = 1;
};
Channels channels(Lowerer& l, const IrNode& n, const Operand& x) {
  const Shape& s = l.shape_of(x);
  if (s.size() < 2)
    throw Unsupported{fmt::format("node {}: {} of a tensor of rank {}", n.name, n.op, s.size())};
  Channels c{s[0], s[1], 1};
  for (size_t d = 2; d < s.size(); ++d) c.hw *= s[d];
  return c;
}

// y * weight[c] + bias[c], weight and bias of shape [C] viewed as `per_channel` (the shape that
// broadcasts a channel's value over y: [C, 1] for y as [N, C, HW]).
int affine(Lowerer& l, const IrNode& n, int y, const Shape& per_channel, std::optional<Operand> w,
           std::optional<Operand> b) {
  const std::string& op = n.op;
  if (w)
    y = l.ew("mul", {t(y), t(l.view(*w, per_channel, n.name + "_w", op))}, n.name + "_scaled", op);
  if (b)
    y = l.ew("add", {t(y), t(l.view(*b, per_channel, n.name + "_b", op))}, n.name + "_shifted", op);
  return y;
}

// (x - mean) * rsqrt(var + eps) with the statistics of x over dim 2 of x [A, B, R] (and over dim
// 0 too when `over_batch`: BatchNorm's per-channel statistics), biased variance.
int normalise(Lowerer& l, const IrNode& n, int x, bool over_batch, double eps) {
  const std::string& op = n.op;
  const Shape s = l.shape_of(t(x));
  const double count = static_cast<double>(s[2] * (over_batch ? s[0] : 1));
  auto stat = [&](int v, const std::string& tag) {
    int r = l.reduce(ReduceKind::kSum, t(v), {2}, true, n.name + tag, op);
    if (over_batch) {
      int rv = l.view(t(r), {s[0], s[1]}, n.name + tag + "_rows", op);
      int b = l.reduce(ReduceKind::kSum, t(rv), {0}, true, n.name + tag + "_batch", op);
      r = l.view(t(b), {1, s[1], 1}, n.name + tag + "_c", op);
    }
    return l.ew("mul", {t(r), num(1.0 / count)}, n.name + tag + "_mean", op);
  };
  int m = stat(x, "_sum");
  int d = l.ew("sub", {t(x), t(m)}, n.name + "_centered", op);
  int q = l.ew("mul", {t(d), t(d)}, n.name + "_sq", op);
  int v = stat(q, "_sqsum");
  int ve = l.ew("add", {t(v), num(eps)}, n.name + "_vareps", op);
  int r = l.ew("rsqrt", {t(ve)}, n.name + "_rstd", op);
  return l.ew("mul", {t(d), t(r)}, n.name + "_norm", op);
}

// batch_norm {training, eps}: args [x, weight, bias, running_mean, running_var]; instance_norm
// {eps}: [x, weight, bias]; group_norm {num_groups, eps}: [x, weight, bias].
int lower_norm_op(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  const Channels c = channels(l, n, x);
  const double eps = l.scalar_param(n, "eps", kKeywordOnly, 1e-5);
  auto w = optional_tensor(l, n, 1, "weight"), b = optional_tensor(l, n, 2, "bias");
  const std::string& op = n.op;
  const Shape xs = l.shape_of(x);
  int y = -1;
  if (op == "batch_norm" && l.scalar_param(n, "training", kKeywordOnly, 0.0) == 0.0) {
    auto rm = optional_tensor(l, n, 3, "running_mean"),
         rv = optional_tensor(l, n, 4, "running_var");
    if (!rm || !rv)
      throw Unsupported{
          fmt::format("node {}: batch_norm in eval mode without running stats", n.name)};
    // In x's own shape (no view of x: a product's epilogue reads its output directly), the
    // centred input first: a pointwise group that starts at full size takes the per-channel
    // rsqrt inline (plan.hpp, KernelGroup::broadcast), so a product's epilogue computes it all.
    Shape pc(xs.size() - 1, 1);
    pc[0] = c.c;
    int d = l.ew("sub", {x, t(l.view(*rm, pc, n.name + "_rm", op))}, n.name + "_centered", op);
    int ve =
        l.ew("add", {t(l.view(*rv, pc, n.name + "_rv", op)), num(eps)}, n.name + "_vareps", op);
    int r = l.ew("rsqrt", {t(ve)}, n.name + "_rstd", op);
    y = l.ew("mul", {t(d), t(r)}, n.name + "_norm", op);
    y = affine(l, n, y, pc, w, b);
    l.rename(y, n.name);
    return y;
  }
  if (op == "group_norm") {
    const double groups = l.scalar_param(n, "num_groups", kKeywordOnly, 1);
    const auto g = static_cast<int64_t>(groups);
    if (g < 1 || c.c % g != 0)
      throw Unsupported{fmt::format("node {}: {} groups of {} channels", n.name, g, c.c)};
    int xv = l.view(x, {c.n, g, c.c / g * c.hw}, n.name + "_x", op);
    y = normalise(l, n, xv, false, eps);
    y = l.view(t(y), {c.n, c.c, c.hw}, n.name + "_channels", op);
  } else {
    int xv = l.view(x, {c.n, c.c, c.hw}, n.name + "_x", op);
    y = normalise(l, n, xv, op == "batch_norm", eps);
  }
  y = affine(l, n, y, {c.c, 1}, w, b);
  return l.view(t(y), xs, n.name, op);
}

// A loss's pointwise terms reduced as `reduction` says: mean, sum, none, or batchmean (the sum
// over the first dim's size).
int reduce_loss(Lowerer& l, const IrNode& n, int terms, std::string reduction) {
  const std::string& op = n.op;
  if (reduction == "none") return l.view(t(terms), l.shape_of(t(terms)), n.name, op);
  const Shape s = l.shape_of(t(terms));
  int sum = l.reduce(ReduceKind::kSum, t(terms), {}, false, n.name + "_sum", op);
  if (reduction == "sum") return l.view(t(sum), {}, n.name, op);
  double count = static_cast<double>(numel(s));
  if (reduction == "batchmean")
    count = s.empty() ? 1.0 : static_cast<double>(s[0]);
  else if (reduction != "mean")
    throw Unsupported{fmt::format("node {}: {} with reduction={}", n.name, op, reduction)};
  return l.ew("mul", {t(sum), num(1.0 / count)}, n.name, op);
}

std::string string_param(Lowerer& l, const IrNode& n, const char* key, const char* dflt) {
  auto p = l.param(n, key, kKeywordOnly);
  if (p && p->is_object() && p->contains("value")) p = (*p)["value"];
  return p && p->is_string() ? p->get<std::string>() : dflt;
}

// ||a - b + eps||_p over the last dim of [B, D] operands: [B].
int pairwise_distance(Lowerer& l, const IrNode& n, Operand a, Operand b, double p, double eps,
                      const std::string& tag) {
  const std::string& op = n.op;
  int d = l.ew("sub", {a, b}, n.name + tag + "_diff", op);
  int e = l.ew("add", {t(d), num(eps)}, n.name + tag + "_eps", op);
  const int last = static_cast<int>(l.shape_of(a).size()) - 1;
  if (p == 1.0) {
    int ab = l.ew("abs", {t(e)}, n.name + tag + "_abs", op);
    return l.reduce(ReduceKind::kSum, t(ab), {last}, false, n.name + tag, op);
  }
  int q = l.ew("mul", {t(e), t(e)}, n.name + tag + "_sq", op);
  int s = l.reduce(ReduceKind::kSum, t(q), {last}, false, n.name + tag + "_sum", op);
  return l.ew("sqrt", {t(s)}, n.name + tag, op);
}

int lower_triplet(Lowerer& l, const IrNode& n) {
  Operand a = l.tensor_arg(n, 0), p = l.tensor_arg(n, 1), ng = l.tensor_arg(n, 2);
  const Shape& s = l.shape_of(a);
  if (s.size() != 2 || l.shape_of(p) != s || l.shape_of(ng) != s)
    throw Unsupported{
        fmt::format("node {}: triplet_margin_loss of operands other than equal [B, D]", n.name)};
  const double order = l.scalar_param(n, "p", kKeywordOnly, 2.0);
  if (order != 1.0 && order != 2.0)
    throw Unsupported{fmt::format("node {}: triplet_margin_loss with p={}", n.name, order)};
  const double eps = l.scalar_param(n, "eps", kKeywordOnly, 1e-6);
  const double margin = l.scalar_param(n, "margin", kKeywordOnly, 1.0);
  const std::string& op = n.op;
  int dap = pairwise_distance(l, n, a, p, order, eps, "_dap");
  int dan = pairwise_distance(l, n, a, ng, order, eps, "_dan");
  if (l.scalar_param(n, "swap", kKeywordOnly, 0.0) != 0.0) {
    int dpn = pairwise_distance(l, n, p, ng, order, eps, "_dpn");
    dan = l.ew("minimum", {t(dan), t(dpn)}, n.name + "_dmin", op);
  }
  int diff = l.ew("sub", {t(dap), t(dan)}, n.name + "_gap", op);
  int m = l.ew("add", {t(diff), num(margin)}, n.name + "_margin", op);
  int terms = l.ew("maximum", {t(m), num(0.0)}, n.name + "_terms", op);
  return reduce_loss(l, n, terms, string_param(l, n, "reduction", "mean"));
}

// cross_entropy {ignore_index, reduction, label_smoothing}: args [input, target] with input
// [C], [N, C] or [N, C, d...] (classes along dim 1, or dim 0 unbatched) and integer class
// indices of the input's shape without the class dim. Per row: the logsumexp of the logits
// minus the logit at the target column (a sum of index_eq: the logit where the column index
// equals the target, else 0), in the row kernels of log_softmax. A row whose target is
// ignore_index contributes 0 and is not counted by the mean; a target outside [0, C) (torch
// raises) gives NaN. Class weights, label smoothing and class probabilities as targets are
// Unsupported.
int lower_cross_entropy(Lowerer& l, const IrNode& n) {
  const std::string& op = n.op;
  const json& args = n.json.value("args", json::array());
  auto weight = l.param(n, "weight", kKeywordOnly);
  if (args.size() > 2 || (weight && !weight->is_null()))
    throw Unsupported{fmt::format("node {}: cross_entropy with class weights (weight=)", n.name)};
  if (l.scalar_param(n, "label_smoothing", kKeywordOnly, 0.0) != 0.0)
    throw Unsupported{fmt::format("node {}: cross_entropy with label_smoothing", n.name)};
  Operand x = l.tensor_arg(n, 0);
  if (args.size() < 2)
    throw Malformed{fmt::format("node {}: cross_entropy lacks a target", n.name)};
  Operand tg = l.operand(args[1], n.where);
  if (tg.is_scalar())
    throw Unsupported{fmt::format("node {}: cross_entropy of a number target", n.name)};
  const std::string& tdtype = l.graph().values[tg.value].dtype;
  if (tdtype != "int64" && tdtype != "int32")
    throw Unsupported{fmt::format(
        "node {}: cross_entropy with {} targets (class probabilities); only class indices are "
        "generated",
        n.name, tdtype)};
  const Shape xs = l.shape_of(x);
  if (xs.empty()) throw Unsupported{fmt::format("node {}: cross_entropy of a scalar", n.name)};
  const int cdim = xs.size() == 1 ? 0 : 1;
  Shape ts = xs, keep = xs;
  ts.erase(ts.begin() + cdim);
  keep[static_cast<size_t>(cdim)] = 1;
  if (l.shape_of(tg) != ts)
    throw Malformed{fmt::format("node {}: target shape {} for input {}", n.name,
                                shape_str(l.shape_of(tg)), shape_str(xs))};
  const double classes = static_cast<double>(xs[static_cast<size_t>(cdim)]);
  const double ignore = l.scalar_param(n, "ignore_index", kKeywordOnly, -100.0);
  int tk = l.view(tg, keep, n.name + "_target", op);
  int m = l.reduce(ReduceKind::kMax, x, {cdim}, true, n.name + "_max", op);
  int d = l.ew("sub", {x, t(m)}, n.name + "_shift", op);
  int e = l.ew("exp", {t(d)}, n.name + "_exp", op);
  int s = l.reduce(ReduceKind::kSum, t(e), {cdim}, true, n.name + "_sum", op);
  int ls = l.ew("log", {t(s)}, n.name + "_log", op);
  int lse = l.ew("add", {t(ls), t(m)}, n.name + "_lse", op);
  int hit = l.ew("index_eq", {x, t(tk)}, n.name + "_hit", op, json{{"index_dim", cdim}});
  int pick = l.reduce(ReduceKind::kSum, t(hit), {cdim}, true, n.name + "_pick", op);
  int nll = l.ew("sub", {t(lse), t(pick)}, n.name + "_nll", op);
  int valid = l.ew("ne", {t(tk), num(ignore)}, n.name + "_valid", op);
  int lo = l.ew("ge", {t(tk), num(0.0)}, n.name + "_lo", op);
  int hi = l.ew("lt", {t(tk), num(classes)}, n.name + "_hi", op);
  int in = l.ew("mul", {t(lo), t(hi)}, n.name + "_inrange", op);
  int checked = l.ew("select", {t(in), t(nll), num(NAN)}, n.name + "_checked", op);
  int terms = l.ew("select", {t(valid), t(checked), num(0.0)}, n.name + "_terms", op);
  const std::string reduction = string_param(l, n, "reduction", "mean");
  if (reduction == "none") return l.view(t(terms), ts, n.name, op);
  int sum = l.reduce(ReduceKind::kSum, t(terms), {}, false, n.name + "_total", op);
  if (reduction == "sum") return l.view(t(sum), {}, n.name, op);
  if (reduction != "mean")
    throw Unsupported{fmt::format("node {}: cross_entropy with reduction={}", n.name, reduction)};
  int count = l.reduce(ReduceKind::kSum, t(valid), {}, false, n.name + "_count", op);
  return l.ew("div", {t(sum), t(count)}, n.name, op);
}

// mse_loss, l1_loss, smooth_l1_loss {beta}, huber_loss {delta}, kl_div {log_target}: pointwise
// terms of (input, target), then the reduction; triplet_margin_loss {margin, p, eps, swap}. An
// argument beyond those (a torch whose mse_loss takes weight=, say) is Unsupported, not dropped.
int lower_loss(Lowerer& l, const IrNode& n) {
  const std::string& op = n.op;
  if (op == "cross_entropy") return lower_cross_entropy(l, n);
  const size_t reads = op == "triplet_margin_loss" ? 3 : 2;
  const size_t given = n.json.value("args", json::array()).size();
  if (given > reads)
    throw Unsupported{
        fmt::format("node {}: {} with {} tensor arguments, not {}", n.name, op, given, reads)};
  if (op == "triplet_margin_loss") return lower_triplet(l, n);
  Operand x = l.tensor_arg(n, 0), y = l.tensor_arg(n, 1);
  int terms = -1;
  if (op == "kl_div") {
    if (l.scalar_param(n, "log_target", kKeywordOnly, 0.0) != 0.0) {
      int e = l.ew("exp", {y}, n.name + "_target", op);
      int d = l.ew("sub", {y, x}, n.name + "_diff", op);
      terms = l.ew("mul", {t(e), t(d)}, n.name + "_terms", op);
    } else {
      int xl = l.ew("xlogy", {y, y}, n.name + "_entropy", op);
      int c = l.ew("mul", {y, x}, n.name + "_cross", op);
      terms = l.ew("sub", {t(xl), t(c)}, n.name + "_terms", op);
    }
  } else {
    int d = l.ew("sub", {x, y}, n.name + "_diff", op);
    if (op == "mse_loss") {
      terms = l.ew("mul", {t(d), t(d)}, n.name + "_terms", op);
    } else {
      int a = l.ew("abs", {t(d)}, n.name + "_abs", op);
      const bool huber = op == "huber_loss";
      const double beta = l.scalar_param(n, huber ? "delta" : "beta", kKeywordOnly, 1.0);
      if (op == "l1_loss" || (!huber && beta == 0.0)) {
        terms = a;
      } else if (op == "smooth_l1_loss" || huber) {
        // |d| < beta ? 0.5 d^2 / beta : |d| - beta / 2, as m (|d| - m / 2) / beta, m = min(|d|,
        // beta)
        int m = l.ew("minimum", {t(a), num(beta)}, n.name + "_m", op);
        int h = l.ew("mul", {t(m), num(0.5)}, n.name + "_h", op);
        int r = l.ew("sub", {t(a), t(h)}, n.name + "_r", op);
        terms = l.ew("mul", {t(m), t(r)}, n.name + "_mr", op);
        if (!huber) terms = l.ew("mul", {t(terms), num(1.0 / beta)}, n.name + "_terms", op);
      } else {
        throw Unsupported{
            fmt::format("op {} (node {}) is not handled by the builtin generator", op, n.name)};
      }
    }
  }
  return reduce_loss(l, n, terms, string_param(l, n, "reduction", "mean"));
}

}  // namespace

int lower_norm_family(Lowerer& l, const IrNode& n) {
  return lower_norm_op(l, n);
}

int lower_loss_family(Lowerer& l, const IrNode& n) {
  return lower_loss(l, n);
}

}  // namespace ok::generate::lowering
