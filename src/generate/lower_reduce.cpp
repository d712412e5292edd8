// The lowering of the "reduction" family: sum, amax, amin, prod, argmax, argmin as reduce nodes;
// mean, var, std, norm and logsumexp rewritten into reductions and elementwise ops.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "generate/lowerer.hpp"

namespace ok::generate::lowering {

namespace {

// What every reduction reads before its own arguments.
struct Reduction {
  Operand x;
  std::vector<int> dims;  // empty: all
  bool keepdim = false;
  int64_t count = 0;  // elements reduced into each output
};

int lower_plain(Lowerer& l, const IrNode& n, const Reduction& r) {
  static const std::map<std::string, ReduceKind> kKinds = {{"sum", ReduceKind::kSum},
                                                           {"amax", ReduceKind::kMax},
                                                           {"amin", ReduceKind::kMin},
                                                           {"prod", ReduceKind::kProd}};
  if (l.param(n, "dtype", kKeywordOnly))
    throw Unsupported{fmt::format("node {}: {} with a dtype argument", n.name, n.op)};
  return l.reduce(kKinds.at(n.op), r.x, r.dims, r.keepdim, n.name, n.op);
}

int lower_mean(Lowerer& l, const IrNode& n, const Reduction& r) {
  int s = l.reduce(ReduceKind::kSum, r.x, r.dims, r.keepdim, n.name + "_sum", n.op);
  Operand inv = Operand::number(1.0 / static_cast<double>(r.count));
  return l.ew("mul", {Operand::tensor(s), inv}, n.name, n.op);
}

int lower_arg(Lowerer& l, const IrNode& n, const Reduction& r) {
  if (r.dims.size() > 1)
    throw Unsupported{fmt::format("node {}: {} over several dims", n.name, n.op)};
  ReduceKind k = n.op == "argmax" ? ReduceKind::kArgmax : ReduceKind::kArgmin;
  return l.reduce(k, r.x, r.dims, r.keepdim, n.name, n.op);
}

// var and std {correction}: the mean of squared deviations over (count - correction).
int lower_moments(Lowerer& l, const IrNode& n, const Reduction& r) {
  double corr = l.scalar_param(n, "correction", kKeywordOnly, 1.0);
  const double count = static_cast<double>(r.count);
  if (count - corr <= 0)
    throw Unsupported{fmt::format("node {}: {} over {} elements with correction {}", n.name, n.op,
                                  r.count, corr)};
  const std::string& op = n.op;
  auto t = Operand::tensor;
  int s = l.reduce(ReduceKind::kSum, r.x, r.dims, true, n.name + "_s", op);
  int m = l.ew("mul", {t(s), Operand::number(1.0 / count)}, n.name + "_m", op);
  int d = l.ew("sub", {r.x, t(m)}, n.name + "_d", op);
  int q = l.ew("mul", {t(d), t(d)}, n.name + "_q", op);
  int ss = l.reduce(ReduceKind::kSum, t(q), r.dims, r.keepdim, n.name + "_ss", op);
  Operand k = Operand::number(1.0 / (count - corr));
  if (op == "var") return l.ew("mul", {t(ss), k}, n.name, op);
  int v = l.ew("mul", {t(ss), k}, n.name + "_v", op);
  return l.ew("sqrt", {t(v)}, n.name, op);
}

// norm's p: a number, {"scalar": p}, or "fro" (2); 2 when absent.
double norm_order(Lowerer& l, const IrNode& n) {
  auto p = l.param(n, "p", 1);
  if (p && p->is_number()) return p->get<double>();
  if (p && p->is_object() && p->contains("scalar")) return l.operand(*p, n.where).scalar;
  if (p && p->is_string() && p->get<std::string>() != "fro")
    throw Unsupported{fmt::format("node {}: norm with p={}", n.name, p->dump())};
  return 2.0;
}

int lower_norm(Lowerer& l, const IrNode& n, const Reduction& r) {
  const double p = norm_order(l, n);
  const std::string& op = n.op;
  auto t = Operand::tensor;
  if (p == 2.0) {
    int q = l.ew("mul", {r.x, r.x}, n.name + "_q", op);
    int s = l.reduce(ReduceKind::kSum, t(q), r.dims, r.keepdim, n.name + "_s", op);
    return l.ew("sqrt", {t(s)}, n.name, op);
  }
  int a = l.ew("abs", {r.x}, n.name + "_a", op);
  if (p == 1.0) return l.reduce(ReduceKind::kSum, t(a), r.dims, r.keepdim, n.name, op);
  if (std::isinf(p))
    return l.reduce(p > 0 ? ReduceKind::kMax : ReduceKind::kMin, t(a), r.dims, r.keepdim, n.name,
                    op);
  int q = lower_pow(l, t(a), Operand::number(p), n.name + "_q");
  int s = l.reduce(ReduceKind::kSum, t(q), r.dims, r.keepdim, n.name + "_s", op);
  return lower_pow(l, t(s), Operand::number(1.0 / p), n.name);
}

// logsumexp: m + log(sum(exp(x - m))) with m the max over the dims, replaced by 0 where it is
// infinite (as PyTorch: a row of -inf gives -inf, a +inf gives +inf, not NaN); every step keeps
// the reduced dims, then a view drops them without keepdim.
int lower_logsumexp(Lowerer& l, const IrNode& n, const Reduction& r) {
  const std::string& op = n.op;
  auto t = Operand::tensor;
  int m = l.reduce(ReduceKind::kMax, r.x, r.dims, true, n.name + "_max", op);
  int a = l.ew("abs", {t(m)}, n.name + "_absmax", op);
  int finite = l.ew("lt", {t(a), Operand::number(INFINITY)}, n.name + "_finite", op);
  int shift = l.ew("select", {t(finite), t(m), Operand::number(0.0)}, n.name + "_shift", op);
  int d = l.ew("sub", {r.x, t(shift)}, n.name + "_centered", op);
  int e = l.ew("exp", {t(d)}, n.name + "_exp", op);
  int s = l.reduce(ReduceKind::kSum, t(e), r.dims, true, n.name + "_sum", op);
  int lg = l.ew("log", {t(s)}, n.name + "_log", op);
  int y = l.ew("add", {t(lg), t(shift)}, r.keepdim ? n.name : n.name + "_keep", op);
  if (r.keepdim) return y;
  Shape out;
  const Shape& xs = l.shape_of(r.x);
  for (int i = 0; i < static_cast<int>(xs.size()); ++i)
    if (!r.dims.empty() && std::find(r.dims.begin(), r.dims.end(), i) == r.dims.end())
      out.push_back(xs[i]);
  return l.view(t(y), out, n.name, op);
}

using ReductionLowering = int (*)(Lowerer&, const IrNode&, const Reduction&);

const std::map<std::string, ReductionLowering> kByOp = {
    {"sum", lower_plain},  {"amax", lower_plain},          {"amin", lower_plain},
    {"prod", lower_plain}, {"mean", lower_mean},           {"argmax", lower_arg},
    {"argmin", lower_arg}, {"var", lower_moments},         {"std", lower_moments},
    {"norm", lower_norm},  {"logsumexp", lower_logsumexp},
};

}  // namespace

int lower_reduction(Lowerer& l, const IrNode& n) {
  auto it = kByOp.find(n.op);
  if (it == kByOp.end())
    throw Unsupported{
        fmt::format("op {} (node {}) is not handled by the builtin generator", n.op, n.name)};
  Reduction r;
  r.x = l.tensor_arg(n, 0);
  r.dims = l.dims_of(n, r.x, 1);
  r.keepdim = l.keepdim_of(n);
  r.count = l.reduced_size(r.x, r.dims);
  return it->second(l, n, r);
}

}  // namespace ok::generate::lowering
