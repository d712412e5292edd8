// The lowering of each op family of data/skills' "ir_ops" but the reductions (lower_reduce.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "generate/lowerer.hpp"

namespace ok::generate {

namespace lowering {

namespace {

using nlohmann::json;

// The op table's scalar params of a primitive, from the node (kwarg or positional after the
// input, in the table's order) else the table's defaults.
json primitive_params(Lowerer& l, const IrNode& n, const std::string& primitive) {
  json params = json::object();
  auto it = l.skills().ops.find(primitive);
  if (it == l.skills().ops.end()) return params;
  size_t pos = 1;
  for (const auto& [name, dflt] : it->second.defaults.items())
    params[name] = l.scalar_param(n, name, pos++, dflt.get<double>());
  return params;
}

int lower_gelu(Lowerer& l, const IrNode& n, Operand x) {
  auto a = l.param(n, "approximate", 1);
  std::string approx = a && a->is_string() ? a->get<std::string>() : "none";
  return l.ew(approx == "tanh" ? "gelu_tanh" : "gelu", {x}, n.name, n.op);
}

// clamp {min, max} (either may be absent) and hardtanh {min_val = -1, max_val = 1} as
// maximum/minimum nodes.
int lower_clamp(Lowerer& l, const IrNode& n, Operand x) {
  const bool clamp = n.op == "clamp";
  std::optional<Operand> lo, hi;
  if (auto p = l.param(n, clamp ? "min" : "min_val", 1)) lo = l.operand(*p, n.where);
  if (auto p = l.param(n, clamp ? "max" : "max_val", 2)) hi = l.operand(*p, n.where);
  if (!clamp) {
    if (!lo) lo = Operand::number(-1.0);
    if (!hi) hi = Operand::number(1.0);
  }
  if (!lo && !hi) throw Unsupported{fmt::format("node {}: clamp without bounds", n.name)};
  if (lo) l.check_dtype(*lo, n.name);
  if (hi) l.check_dtype(*hi, n.name);
  Operand cur = x;
  if (lo) cur = Operand::tensor(l.ew("maximum", {cur, *lo}, hi ? n.name + "_lo" : n.name, n.op));
  if (hi) cur = Operand::tensor(l.ew("minimum", {cur, *hi}, n.name, n.op));
  return cur.value;
}

// One tensor in, the op table's op of the same name out (its params read from the node), but for
// the ops with a lowering of their own.
int lower_pointwise(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  if (n.op == "gelu") return lower_gelu(l, n, x);
  if (n.op == "hardtanh" || n.op == "clamp") return lower_clamp(l, n, x);
  return l.ew(n.op, {x}, n.name, n.op, primitive_params(l, n, n.op));
}

// Two operands (either may be a number) that broadcast; the op table's op of the same name.
int lower_binary(Lowerer& l, const IrNode& n) {
  if (!n.json.contains("args") || n.json["args"].size() < 2)
    throw Malformed{fmt::format("node {} ({}) needs two arguments", n.name, n.op)};
  Operand a = l.operand(n.json["args"][0], n.where), b = l.operand(n.json["args"][1], n.where);
  l.check_dtype(a, n.name);
  l.check_dtype(b, n.name);
  if (n.op == "div") {
    auto rm = l.param(n, "rounding_mode", 2);
    if (rm && !rm->is_null())
      throw Unsupported{fmt::format("node {}: div with rounding_mode {}", n.name, rm->dump())};
  }
  if (n.op == "pow") return lower_pow(l, a, b, n.name);
  return l.ew(n.op, {a, b}, n.name, n.op);
}

// softmax and log_softmax over one dim, shifted by the row's max.
int lower_softmax(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  std::vector<int> dims = l.dims_of(n, x, 1);
  if (dims.size() != 1) throw Malformed{fmt::format("node {}: {} needs one dim", n.name, n.op)};
  const std::string& op = n.op;
  auto t = Operand::tensor;
  int m = l.reduce(ReduceKind::kMax, x, dims, true, n.name + "_max", op);
  int d = l.ew("sub", {x, t(m)}, n.name + "_shift", op);
  int e = l.ew("exp", {t(d)}, n.name + "_exp", op);
  int s = l.reduce(ReduceKind::kSum, t(e), dims, true, n.name + "_sum", op);
  if (op == "softmax") return l.ew("div", {t(e), t(s)}, n.name, op);
  int lse = l.ew("log", {t(s)}, n.name + "_lse", op);
  return l.ew("sub", {t(d), t(lse)}, n.name, op);
}

// The trailing dims layer_norm normalises over, from normalized_shape.
std::vector<int> normalized_dims(Lowerer& l, const IrNode& n, const Operand& x) {
  auto ns = l.param(n, "normalized_shape", 1);
  std::vector<int64_t> norm_shape;
  if (ns && ns->is_array())
    for (const auto& d : *ns) norm_shape.push_back(d.get<int64_t>());
  else if (ns && ns->is_number_integer())
    norm_shape.push_back(ns->get<int64_t>());
  else
    throw Malformed{fmt::format("node {}: layer_norm without normalized_shape", n.name)};
  const Shape& s = l.shape_of(x);
  if (norm_shape.size() > s.size() ||
      !std::equal(norm_shape.begin(), norm_shape.end(), s.end() - norm_shape.size()))
    throw Malformed{
        fmt::format("node {}: normalized_shape does not match {}", n.name, shape_str(s))};
  std::vector<int> dims;
  for (size_t d = s.size() - norm_shape.size(); d < s.size(); ++d)
    dims.push_back(static_cast<int>(d));
  return dims;
}

int lower_layer_norm(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  std::vector<int> dims = normalized_dims(l, n, x);
  double eps = l.scalar_param(n, "eps", 4, 1e-5);
  // weight and bias: a tensor at args[1]/args[2], else the kwarg; absent as {"value": null}.
  auto positional = [&](size_t i) -> std::optional<Operand> {
    const json& a = n.json["args"];
    if (a.size() > i && a[i].is_object() && !a[i].contains("value"))
      return l.operand(a[i], n.where);
    return std::nullopt;
  };
  auto keyword = [&](const char* key) -> std::optional<Operand> {
    if (!n.json.contains("kwargs") || !n.json["kwargs"].contains(key)) return std::nullopt;
    const json& a = n.json["kwargs"][key];
    if (a.is_null() || a.contains("value")) return std::nullopt;
    return l.operand(a, n.where);
  };
  std::optional<Operand> w = positional(1), b = positional(2);
  if (!w) w = keyword("weight");
  if (!b) b = keyword("bias");
  if (w) l.check_dtype(*w, n.name);
  if (b) l.check_dtype(*b, n.name);
  const std::string& op = n.op;
  auto t = Operand::tensor;
  Operand inv = Operand::number(1.0 / static_cast<double>(l.reduced_size(x, dims)));
  int s1 = l.reduce(ReduceKind::kSum, x, dims, true, n.name + "_sum", op);
  int m = l.ew("mul", {t(s1), inv}, n.name + "_mean", op);
  int d = l.ew("sub", {x, t(m)}, n.name + "_centered", op);
  int q = l.ew("mul", {t(d), t(d)}, n.name + "_sq", op);
  int s2 = l.reduce(ReduceKind::kSum, t(q), dims, true, n.name + "_sqsum", op);
  int v = l.ew("mul", {t(s2), inv}, n.name + "_var", op);
  int ve = l.ew("add", {t(v), Operand::number(eps)}, n.name + "_vareps", op);
  int r = l.ew("rsqrt", {t(ve)}, n.name + "_rstd", op);
  int y = l.ew("mul", {t(d), t(r)}, w || b ? n.name + "_norm" : n.name, op);
  if (w) y = l.ew("mul", {t(y), *w}, b ? n.name + "_scaled" : n.name, op);
  if (b) y = l.ew("add", {t(y), *b}, n.name, op);
  return y;
}

// reshape, flatten, contiguous, view: one `reshape` view node to the IR's shape; where a computed
// value keeps its shape (contiguous, and so clone, detach and dropout in eval mode) it is that
// value, so a product's tail that reads it through a copy still reads the product alone.
int lower_view(Lowerer& l, const IrNode& n) {
  Operand x = l.tensor_arg(n, 0);
  if (numel(l.shape_of(x)) != numel(n.shape))
    throw Malformed{fmt::format("node {}: {} changes the element count", n.name, n.op)};
  if (l.shape_of(x) == n.shape && l.graph().values[x.value].kind == ValueKind::kNode)
    return x.value;
  return l.view(x, n.shape, n.name, n.op);
}

// Kept as the PyTorch call: every argument as is, {"value": null} as None.
int lower_vendor(Lowerer& l, const IrNode& n) {
  // nn.Linear with its weight among the attrs (a hand-written IR may lack it: a PyTorch call).
  const bool linear_module = n.op == "module" && n.json.contains("kwargs") &&
                             n.json["kwargs"].value("type", "") == "Linear" &&
                             l.attr(n.json["kwargs"].value("target", "") + ".weight").has_value();
  if (n.op == "linear" || linear_module) return lower_linear(l, n);
  Node v;
  v.kind = NodeKind::kVendor;
  v.op = n.op;
  v.origin = n.op;
  if (!n.json.contains("args") || !n.json["args"].is_array())
    throw Malformed{fmt::format("node {} ({}) has no args", n.name, n.op)};
  for (const auto& a : n.json["args"]) {
    if (a.is_object() && a.contains("value") && a["value"].is_null()) {
      v.args.push_back(Operand::none());  // linear without bias, say
      continue;
    }
    Operand o = l.operand(a, n.where);
    if (!o.is_scalar()) l.check_dtype(o, n.name);
    v.args.push_back(o);
  }
  if (n.op == "module") {
    std::string target = n.json.contains("kwargs") ? n.json["kwargs"].value("target", "") : "";
    if (target.empty()) throw Malformed{fmt::format("node {}: module without a target", n.name)};
    v.params["target"] = target;
    v.params["type"] = n.json["kwargs"].value("type", "");
  }
  return l.add_node(std::move(v), n.name, n.shape);
}

const std::map<std::string, Lowering>& lowerings() {
  static const std::map<std::string, Lowering> kByFamily = {
      {"pointwise", lower_pointwise},   {"binary", lower_binary},
      {"reduction", lower_reduction},   {"softmax", lower_softmax},
      {"layer_norm", lower_layer_norm}, {"view", lower_view},
      {"vendor", lower_vendor},         {"matmul", lower_matmul},
      {"permute", lower_permute},       {"diag", lower_diag},
      {"triangle", lower_triangle},     {"norm", lower_norm_family},
      {"loss", lower_loss_family},      {"conv", lower_conv},
      {"pool", lower_pool_family},      {"scan", lower_scan_family},
      {"index", lower_index},
  };
  return kByFamily;
}

// a ** e for an integer |e| in [2, 16] by squaring, as multiplications: exact, and it vectorises.
int integer_pow(Lowerer& l, Operand a, double e, const std::string& name) {
  int k = static_cast<int>(std::fabs(e));
  std::optional<Operand> acc;
  Operand base = a;
  int step = 0;
  while (k > 0) {
    if (k & 1) {
      if (!acc)
        acc = base;
      else
        acc =
            Operand::tensor(l.ew("mul", {*acc, base}, fmt::format("{}_p{}", name, step++), "pow"));
    }
    k >>= 1;
    if (k)
      base = Operand::tensor(l.ew("mul", {base, base}, fmt::format("{}_p{}", name, step++), "pow"));
  }
  if (e < 0) return l.ew("reciprocal", {*acc}, name, "pow");
  l.rename(acc->value, name);  // the last product carries the node's name
  return acc->value;
}

}  // namespace

Lowering find_lowering(const std::string& family) {
  auto it = lowerings().find(family);
  return it == lowerings().end() ? nullptr : it->second;
}

int lower_pow(Lowerer& l, Operand a, Operand b, const std::string& name) {
  if (a.is_scalar() && b.is_scalar())
    throw Unsupported{fmt::format("node {}: pow of two scalars", name)};
  if (!a.is_scalar() && b.is_scalar()) {
    double e = b.scalar;
    if (e == 1.0) return l.ew("mul", {a, Operand::number(1.0)}, name, "pow");
    if (e == 0.5) return l.ew("sqrt", {a}, name, "pow");
    if (e == -0.5) return l.ew("rsqrt", {a}, name, "pow");
    if (std::floor(e) == e && std::fabs(e) >= 2 && std::fabs(e) <= 16)
      return integer_pow(l, a, e, name);
    if (e == -1.0) return l.ew("reciprocal", {a}, name, "pow");
    return l.ew("pow", {a, b}, name, "pow");
  }
  if (a.is_scalar()) {  // a ** b = exp2(b * log2(a))
    if (a.scalar <= 0)
      throw Unsupported{
          fmt::format("node {}: pow with base {} and a tensor exponent", name, a.scalar)};
    int l2 = l.ew("mul", {b, Operand::number(std::log2(a.scalar))}, name + "_l", "pow");
    return l.ew("exp2", {Operand::tensor(l2)}, name, "pow");
  }
  return l.ew("pow", {a, b}, name, "pow");
}

}  // namespace lowering

std::vector<std::string> lowered_families() {
  std::vector<std::string> out;
  for (const auto& [family, fn] : lowering::lowerings()) out.push_back(family);
  return out;
}

}  // namespace ok::generate
