#include "generate/graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>

namespace ok::generate {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

const char* reduce_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::kSum:
      return "sum";
    case ReduceKind::kMax:
      return "max";
    case ReduceKind::kMin:
      return "min";
    case ReduceKind::kProd:
      return "prod";
    case ReduceKind::kArgmax:
      return "argmax";
    case ReduceKind::kArgmin:
      return "argmin";
  }
  return "?";
}

namespace {

using nlohmann::json;

// Unsupported-but-well-formed: carried up to lower() as a reason.
struct Unsupported {
  std::string reason;
};

// Malformed IR.
struct Malformed {
  std::string message;
};

const std::set<std::string> kUnary = {
    "relu",       "sigmoid",    "tanh",     "exp",         "log",       "log1p", "expm1",
    "abs",        "neg",        "sqrt",     "rsqrt",       "sin",       "cos",   "erf",
    "reciprocal", "square",     "sign",     "floor",       "ceil",      "round", "silu",
    "mish",       "selu",       "softsign", "hardsigmoid", "hardswish", "gelu",  "softplus",
    "elu",        "leaky_relu", "hardtanh", "clamp",       "threshold"};
const std::set<std::string> kBinary = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"};
const std::set<std::string> kReductions = {"sum",    "mean",   "amax", "amin", "prod",
                                           "argmax", "argmin", "var",  "std",  "norm"};
const std::set<std::string> kVendor = {"module", "linear", "matmul", "mm", "bmm"};
const std::set<std::string> kViews = {"reshape", "flatten", "contiguous", "view"};

Shape to_shape(const json& j, const std::string& what) {
  if (!j.is_array()) throw Malformed{fmt::format("{} has no shape list", what)};
  Shape s;
  for (const auto& d : j) {
    if (!d.is_number_integer())
      throw Malformed{fmt::format("{} has a non-integer dimension", what)};
    s.push_back(d.get<int64_t>());
  }
  return s;
}

std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

class Lowerer {
 public:
  Lowerer(const json& ir, const Skills& skills) : ir_(ir), skills_(skills) {}

  Graph run() {
    if (!ir_.is_object()) throw Malformed{"the graph IR is not a JSON object"};
    if (ir_.contains("traceable") && ir_["traceable"].is_boolean() &&
        !ir_["traceable"].get<bool>()) {
      std::string why = ir_.contains("reason") && ir_["reason"].is_string()
                            ? ir_["reason"].get<std::string>()
                            : "no reason given";
      throw Unsupported{fmt::format("the reference could not be traced: {}", why)};
    }
    for (const char* key : {"inputs", "nodes", "outputs"})
      if (!ir_.contains(key) || !ir_[key].is_array())
        throw Malformed{fmt::format("the graph IR has no \"{}\" list", key)};
    for (const auto& in : ir_["inputs"]) {
      std::string name = in.value("name", "");
      if (name.empty()) throw Malformed{"an input has no name"};
      Value v{ValueKind::kInput, name, to_shape(in.value("shape", json()), "input " + name),
              in.value("dtype", "float32"), -1};
      int id = add_value(std::move(v));
      inputs_[name] = id;
      g_.inputs.push_back(id);
    }
    if (ir_.contains("attrs") && ir_["attrs"].is_array()) {
      for (const auto& a : ir_["attrs"]) {
        std::string name = a.value("name", "");
        if (name.empty()) throw Malformed{"an attr has no name"};
        Value v{ValueKind::kAttr, name, to_shape(a.value("shape", json()), "attr " + name),
                a.value("dtype", "float32"), -1};
        attrs_[name] = add_value(std::move(v));
      }
    }
    for (const auto& n : ir_["nodes"]) lower_node(n);
    const auto& outs = ir_["outputs"];
    if (outs.size() != 1)
      throw Unsupported{fmt::format(
          "the forward returns {} values; the builtin generator handles one", outs.size())};
    Operand o = operand(outs[0], "the output");
    if (o.is_scalar()) throw Unsupported{"the forward returns a Python scalar"};
    g_.output = o.value;
    const Value& ov = g_.values[o.value];
    if (ov.dtype != "float32" && ov.dtype != "int64")
      throw Unsupported{fmt::format("unsupported dtype {} (the output)", ov.dtype)};
    return std::move(g_);
  }

 private:
  int add_value(Value v) {
    g_.values.push_back(std::move(v));
    return static_cast<int>(g_.values.size()) - 1;
  }

  int add_node(Node n, const std::string& name, Shape shape, std::string dtype = "float32") {
    int vid = add_value(Value{ValueKind::kNode, name, std::move(shape), std::move(dtype),
                              static_cast<int>(g_.nodes.size())});
    n.out = vid;
    if (n.kind == NodeKind::kElementwise && !skills_.ops.contains(n.op))
      throw Unsupported{fmt::format("op {} (node {}) has no template in the op table", n.op, name)};
    g_.nodes.push_back(std::move(n));
    return vid;
  }

  const Shape& shape_of(const Operand& o) {
    static const Shape kScalar{};
    return o.is_scalar() ? kScalar : g_.values[o.value].shape;
  }

  void check_dtype(const Operand& o, const std::string& node) {
    if (o.is_scalar()) return;
    const Value& v = g_.values[o.value];
    if (v.dtype != "float32")
      throw Unsupported{fmt::format("unsupported dtype {} ({} {} used by node {})", v.dtype,
                                    v.kind == ValueKind::kInput  ? "input"
                                    : v.kind == ValueKind::kAttr ? "attr"
                                                                 : "node",
                                    v.name, node)};
  }

  Operand operand(const json& a, const std::string& where) {
    if (a.is_number()) return Operand{-1, a.get<double>()};
    if (a.is_boolean()) return Operand{-1, a.get<bool>() ? 1.0 : 0.0};
    if (!a.is_object()) throw Malformed{fmt::format("{}: an argument is not an object", where)};
    if (a.contains("node")) {
      auto it = nodes_.find(a["node"].get<std::string>());
      if (it == nodes_.end())
        throw Malformed{fmt::format("{}: unknown node {}", where, a["node"].dump())};
      return Operand{it->second, 0};
    }
    if (a.contains("input")) {
      auto it = inputs_.find(a["input"].get<std::string>());
      if (it == inputs_.end())
        throw Malformed{fmt::format("{}: unknown input {}", where, a["input"].dump())};
      return Operand{it->second, 0};
    }
    if (a.contains("attr")) {
      auto it = attrs_.find(a["attr"].get<std::string>());
      if (it == attrs_.end())
        throw Malformed{fmt::format("{}: unknown attr {}", where, a["attr"].dump())};
      return Operand{it->second, 0};
    }
    if (a.contains("scalar")) {
      const auto& s = a["scalar"];
      if (s.is_boolean()) return Operand{-1, s.get<bool>() ? 1.0 : 0.0};
      if (s.is_number()) return Operand{-1, s.get<double>()};
      if (s.is_string()) {  // "inf", "-inf", "nan" as the worker may spell them
        std::string t = s.get<std::string>();
        if (t == "inf" || t == "Infinity") return Operand{-1, INFINITY};
        if (t == "-inf" || t == "-Infinity") return Operand{-1, -INFINITY};
      }
      throw Malformed{fmt::format("{}: scalar {} is not a number", where, s.dump())};
    }
    throw Unsupported{fmt::format("{}: argument {} is not a tensor or a number", where, a.dump())};
  }

  // A kwarg, else the positional arg at `pos`; nullopt when absent or None.
  std::optional<json> param(const json& n, const std::string& name, size_t pos) {
    const json* v = nullptr;
    if (n.contains("kwargs") && n["kwargs"].is_object() && n["kwargs"].contains(name))
      v = &n["kwargs"][name];
    else if (n.contains("args") && n["args"].is_array() && n["args"].size() > pos)
      v = &n["args"][pos];
    if (!v || v->is_null()) return std::nullopt;
    if (v->is_object() && v->contains("value")) {
      if ((*v)["value"].is_null()) return std::nullopt;
      return (*v)["value"];
    }
    if (v->is_object() && v->contains("ints")) return (*v)["ints"];
    return *v;
  }

  double scalar_param(const json& n, const std::string& name, size_t pos, double dflt,
                      const std::string& where) {
    auto p = param(n, name, pos);
    if (!p) return dflt;
    Operand o = operand(*p, where);
    if (!o.is_scalar())
      throw Unsupported{fmt::format("{}: tensor-valued {} is not handled", where, name)};
    return o.scalar;
  }

  int ew(const std::string& op, std::vector<Operand> args, const std::string& name,
         const std::string& origin, json params = json::object()) {
    Shape shape;
    bool any_tensor = false;
    for (const auto& a : args) {
      if (a.is_scalar()) continue;
      if (!any_tensor) {
        shape = shape_of(a);
        any_tensor = true;
        continue;
      }
      auto b = broadcast(shape, shape_of(a));
      if (!b)
        throw Unsupported{fmt::format("node {}: shapes {} and {} do not broadcast", name,
                                      shape_str(shape), shape_str(shape_of(a)))};
      shape = *b;
    }
    if (!any_tensor)
      throw Unsupported{fmt::format("node {} ({}) has only scalar operands", name, op)};
    Node n;
    n.kind = NodeKind::kElementwise;
    n.op = op;
    n.args = std::move(args);
    n.params = std::move(params);
    n.origin = origin;
    return add_node(std::move(n), name, shape);
  }

  // dims: sorted, contiguous; empty = all.
  int reduce(ReduceKind k, Operand x, std::vector<int> dims, bool keepdim, const std::string& name,
             const std::string& origin) {
    const Shape& s = shape_of(x);
    if (dims.empty()) {
      dims.resize(s.size());
      std::iota(dims.begin(), dims.end(), 0);
    }
    Shape out;
    for (int d = 0; d < static_cast<int>(s.size()); ++d) {
      bool r = std::find(dims.begin(), dims.end(), d) != dims.end();
      if (!r)
        out.push_back(s[d]);
      else if (keepdim)
        out.push_back(1);
    }
    Node n;
    n.kind = NodeKind::kReduce;
    n.op = reduce_name(k);
    n.reduce = k;
    n.args = {x};
    n.dims = std::move(dims);
    n.origin = origin;
    bool arg = k == ReduceKind::kArgmax || k == ReduceKind::kArgmin;
    return add_node(std::move(n), name, out, arg ? "int64" : "float32");
  }

  std::vector<int> dims_of(const json& n, const Operand& x, const std::string& name, size_t pos) {
    int rank = static_cast<int>(shape_of(x).size());
    auto p = param(n, "dim", pos);
    std::vector<int> dims;
    if (p) {
      if (p->is_number_integer())
        dims.push_back(p->get<int>());
      else if (p->is_array())
        for (const auto& d : *p) dims.push_back(d.get<int>());
      else if (p->is_object() && p->contains("scalar"))
        dims.push_back((*p)["scalar"].get<int>());
      else
        throw Malformed{fmt::format("node {}: dim {} is not a list of ints", name, p->dump())};
    }
    for (int& d : dims) {
      if (d < 0) d += rank;
      if (d < 0 || d >= rank)
        throw Malformed{
            fmt::format("node {}: dim out of range for shape {}", name, shape_str(shape_of(x)))};
    }
    std::sort(dims.begin(), dims.end());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
    for (size_t i = 1; i < dims.size(); ++i)
      if (dims[i] != dims[i - 1] + 1)
        throw Unsupported{fmt::format("node {}: reduction over non-adjacent dims of shape {}", name,
                                      shape_str(shape_of(x)))};
    return dims;
  }

  int64_t reduced_size(const Operand& x, const std::vector<int>& dims) {
    const Shape& s = shape_of(x);
    if (dims.empty()) return numel(s);
    int64_t r = 1;
    for (int d : dims) r *= s[d];
    return r;
  }

  bool keepdim_of(const json& n) {
    auto p = param(n, "keepdim", 99);
    if (!p) return false;
    if (p->is_boolean()) return p->get<bool>();
    if (p->is_object() && p->contains("scalar")) return (*p)["scalar"].get<double>() != 0;
    return false;
  }

  void lower_node(const json& n) {
    std::string name = n.value("name", "");
    std::string op = n.value("op", "");
    if (name.empty() || op.empty()) throw Malformed{"a node lacks a name or an op"};
    std::string dtype = n.value("dtype", "float32");
    Shape shape = to_shape(n.value("shape", json::array()), "node " + name);
    std::vector<Operand> args;
    auto tensor_arg = [&](size_t i) {
      if (!n.contains("args") || n["args"].size() <= i)
        throw Malformed{fmt::format("node {} ({}) lacks argument {}", name, op, i)};
      Operand o = operand(n["args"][i], "node " + name);
      if (o.is_scalar())
        throw Unsupported{fmt::format("node {} ({}): argument {} is a scalar", name, op, i)};
      check_dtype(o, name);
      return o;
    };
    auto where = "node " + name;
    int result = -1;

    if (op == "unknown") {
      std::string target = n.contains("kwargs") ? n["kwargs"].value("target", "?") : "?";
      throw Unsupported{
          fmt::format("op {} (node {}) is not one the builtin generator knows", target, name)};
    }
    bool is_arg = op == "argmax" || op == "argmin";
    if (dtype != "float32" && !(is_arg && dtype == "int64"))
      throw Unsupported{fmt::format("unsupported dtype {} (node {}, op {}, shape {})", dtype, name,
                                    op, shape_str(shape))};

    if (kUnary.contains(op)) {
      Operand x = tensor_arg(0);
      if (op == "gelu") {
        auto a = param(n, "approximate", 1);
        std::string approx = a && a->is_string() ? a->get<std::string>() : "none";
        result = ew(approx == "tanh" ? "gelu_tanh" : "gelu", {x}, name, op);
      } else if (op == "softplus") {
        result = ew("softplus", {x}, name, op,
                    {{"beta", scalar_param(n, "beta", 1, 1.0, where)},
                     {"threshold", scalar_param(n, "threshold", 2, 20.0, where)}});
      } else if (op == "elu") {
        result = ew("elu", {x}, name, op, {{"alpha", scalar_param(n, "alpha", 1, 1.0, where)}});
      } else if (op == "leaky_relu") {
        result = ew("leaky_relu", {x}, name, op,
                    {{"negative_slope", scalar_param(n, "negative_slope", 1, 0.01, where)}});
      } else if (op == "threshold") {
        result = ew("threshold", {x}, name, op,
                    {{"threshold", scalar_param(n, "threshold", 1, 0.0, where)},
                     {"value", scalar_param(n, "value", 2, 0.0, where)}});
      } else if (op == "hardtanh" || op == "clamp") {
        std::optional<Operand> lo, hi;
        const char* lo_name = op == "clamp" ? "min" : "min_val";
        const char* hi_name = op == "clamp" ? "max" : "max_val";
        if (auto p = param(n, lo_name, 1)) lo = operand(*p, where);
        if (auto p = param(n, hi_name, 2)) hi = operand(*p, where);
        if (op == "hardtanh") {
          if (!lo) lo = Operand{-1, -1.0};
          if (!hi) hi = Operand{-1, 1.0};
        }
        if (!lo && !hi) throw Unsupported{fmt::format("node {}: clamp without bounds", name)};
        if (lo) check_dtype(*lo, name);
        if (hi) check_dtype(*hi, name);
        Operand cur = x;
        if (lo) cur = Operand{ew("maximum", {cur, *lo}, hi ? name + "_lo" : name, op), 0};
        if (hi) cur = Operand{ew("minimum", {cur, *hi}, name, op), 0};
        result = cur.value;
      } else {
        result = ew(op, {x}, name, op);
      }
    } else if (kBinary.contains(op)) {
      if (!n.contains("args") || n["args"].size() < 2)
        throw Malformed{fmt::format("node {} ({}) needs two arguments", name, op)};
      Operand a = operand(n["args"][0], where), b = operand(n["args"][1], where);
      check_dtype(a, name);
      check_dtype(b, name);
      if (op == "div") {
        auto rm = param(n, "rounding_mode", 2);
        if (rm && !rm->is_null())
          throw Unsupported{fmt::format("node {}: div with rounding_mode {}", name, rm->dump())};
      }
      if (op == "pow")
        result = lower_pow(a, b, name);
      else
        result = ew(op, {a, b}, name, op);
    } else if (kReductions.contains(op)) {
      Operand x = tensor_arg(0);
      std::vector<int> dims = dims_of(n, x, name, 1);
      bool keep = keepdim_of(n);
      int64_t r = reduced_size(x, dims);
      if (op == "sum" || op == "amax" || op == "amin" || op == "prod") {
        auto dt = param(n, "dtype", 99);
        if (dt) throw Unsupported{fmt::format("node {}: {} with a dtype argument", name, op)};
        ReduceKind k = op == "sum"    ? ReduceKind::kSum
                       : op == "amax" ? ReduceKind::kMax
                       : op == "amin" ? ReduceKind::kMin
                                      : ReduceKind::kProd;
        result = reduce(k, x, dims, keep, name, op);
      } else if (op == "mean") {
        int s = reduce(ReduceKind::kSum, x, dims, keep, name + "_sum", op);
        result = ew("mul", {Operand{s, 0}, Operand{-1, 1.0 / static_cast<double>(r)}}, name, op);
      } else if (op == "argmax" || op == "argmin") {
        if (dims.size() > 1)
          throw Unsupported{fmt::format("node {}: {} over several dims", name, op)};
        result = reduce(op == "argmax" ? ReduceKind::kArgmax : ReduceKind::kArgmin, x, dims, keep,
                        name, op);
      } else if (op == "var" || op == "std") {
        double corr = scalar_param(n, "correction", 99, 1.0, where);
        if (static_cast<double>(r) - corr <= 0)
          throw Unsupported{
              fmt::format("node {}: {} over {} elements with correction {}", name, op, r, corr)};
        int s = reduce(ReduceKind::kSum, x, dims, true, name + "_s", op);
        int m =
            ew("mul", {Operand{s, 0}, Operand{-1, 1.0 / static_cast<double>(r)}}, name + "_m", op);
        int d = ew("sub", {x, Operand{m, 0}}, name + "_d", op);
        int q = ew("mul", {Operand{d, 0}, Operand{d, 0}}, name + "_q", op);
        int ss = reduce(ReduceKind::kSum, Operand{q, 0}, dims, keep, name + "_ss", op);
        double k = 1.0 / (static_cast<double>(r) - corr);
        if (op == "var") {
          result = ew("mul", {Operand{ss, 0}, Operand{-1, k}}, name, op);
        } else {
          int v = ew("mul", {Operand{ss, 0}, Operand{-1, k}}, name + "_v", op);
          result = ew("sqrt", {Operand{v, 0}}, name, op);
        }
      } else {  // norm
        auto p = param(n, "p", 1);
        double pv = 2.0;
        if (p && p->is_number())
          pv = p->get<double>();
        else if (p && p->is_object() && p->contains("scalar"))
          pv = operand(*p, where).scalar;
        else if (p && p->is_string() && p->get<std::string>() != "fro")
          throw Unsupported{fmt::format("node {}: norm with p={}", name, p->dump())};
        if (pv == 2.0) {
          int q = ew("mul", {x, x}, name + "_q", op);
          int s = reduce(ReduceKind::kSum, Operand{q, 0}, dims, keep, name + "_s", op);
          result = ew("sqrt", {Operand{s, 0}}, name, op);
        } else if (pv == 1.0) {
          int a = ew("abs", {x}, name + "_a", op);
          result = reduce(ReduceKind::kSum, Operand{a, 0}, dims, keep, name, op);
        } else if (std::isinf(pv)) {
          int a = ew("abs", {x}, name + "_a", op);
          result = reduce(pv > 0 ? ReduceKind::kMax : ReduceKind::kMin, Operand{a, 0}, dims, keep,
                          name, op);
        } else {
          int a = ew("abs", {x}, name + "_a", op);
          int q = lower_pow(Operand{a, 0}, Operand{-1, pv}, name + "_q");
          int s = reduce(ReduceKind::kSum, Operand{q, 0}, dims, keep, name + "_s", op);
          result = lower_pow(Operand{s, 0}, Operand{-1, 1.0 / pv}, name);
        }
      }
    } else if (op == "softmax" || op == "log_softmax") {
      Operand x = tensor_arg(0);
      std::vector<int> dims = dims_of(n, x, name, 1);
      if (dims.size() != 1) throw Malformed{fmt::format("node {}: {} needs one dim", name, op)};
      int m = reduce(ReduceKind::kMax, x, dims, true, name + "_max", op);
      int d = ew("sub", {x, Operand{m, 0}}, name + "_shift", op);
      int e = ew("exp", {Operand{d, 0}}, name + "_exp", op);
      int s = reduce(ReduceKind::kSum, Operand{e, 0}, dims, true, name + "_sum", op);
      if (op == "softmax") {
        result = ew("div", {Operand{e, 0}, Operand{s, 0}}, name, op);
      } else {
        int l = ew("log", {Operand{s, 0}}, name + "_lse", op);
        result = ew("sub", {Operand{d, 0}, Operand{l, 0}}, name, op);
      }
    } else if (op == "layer_norm") {
      Operand x = tensor_arg(0);
      auto ns = param(n, "normalized_shape", 1);
      std::vector<int64_t> norm_shape;
      if (ns && ns->is_array())
        for (const auto& d : *ns) norm_shape.push_back(d.get<int64_t>());
      else if (ns && ns->is_number_integer())
        norm_shape.push_back(ns->get<int64_t>());
      else
        throw Malformed{fmt::format("node {}: layer_norm without normalized_shape", name)};
      const Shape& s = shape_of(x);
      if (norm_shape.size() > s.size() ||
          !std::equal(norm_shape.begin(), norm_shape.end(), s.end() - norm_shape.size()))
        throw Malformed{
            fmt::format("node {}: normalized_shape does not match {}", name, shape_str(s))};
      std::vector<int> dims;
      for (size_t d = s.size() - norm_shape.size(); d < s.size(); ++d)
        dims.push_back(static_cast<int>(d));
      double eps = scalar_param(n, "eps", 4, 1e-5, where);
      std::optional<Operand> w, b;
      if (n["args"].size() > 1 && n["args"][1].is_object() && !n["args"][1].contains("value"))
        w = operand(n["args"][1], where);
      if (n["args"].size() > 2 && n["args"][2].is_object() && !n["args"][2].contains("value"))
        b = operand(n["args"][2], where);
      if (!w && n.contains("kwargs") && n["kwargs"].contains("weight") &&
          !n["kwargs"]["weight"].is_null() && !n["kwargs"]["weight"].contains("value"))
        w = operand(n["kwargs"]["weight"], where);
      if (!b && n.contains("kwargs") && n["kwargs"].contains("bias") &&
          !n["kwargs"]["bias"].is_null() && !n["kwargs"]["bias"].contains("value"))
        b = operand(n["kwargs"]["bias"], where);
      if (w) check_dtype(*w, name);
      if (b) check_dtype(*b, name);
      double inv = 1.0 / static_cast<double>(reduced_size(x, dims));
      int s1 = reduce(ReduceKind::kSum, x, dims, true, name + "_sum", op);
      int m = ew("mul", {Operand{s1, 0}, Operand{-1, inv}}, name + "_mean", op);
      int d = ew("sub", {x, Operand{m, 0}}, name + "_centered", op);
      int q = ew("mul", {Operand{d, 0}, Operand{d, 0}}, name + "_sq", op);
      int s2 = reduce(ReduceKind::kSum, Operand{q, 0}, dims, true, name + "_sqsum", op);
      int v = ew("mul", {Operand{s2, 0}, Operand{-1, inv}}, name + "_var", op);
      int ve = ew("add", {Operand{v, 0}, Operand{-1, eps}}, name + "_vareps", op);
      int r = ew("rsqrt", {Operand{ve, 0}}, name + "_rstd", op);
      bool more = w || b;
      int y = ew("mul", {Operand{d, 0}, Operand{r, 0}}, more ? name + "_norm" : name, op);
      if (w) y = ew("mul", {Operand{y, 0}, *w}, b ? name + "_scaled" : name, op);
      if (b) y = ew("add", {Operand{y, 0}, *b}, name, op);
      result = y;
    } else if (kViews.contains(op)) {
      Operand x = tensor_arg(0);
      if (numel(shape_of(x)) != numel(shape))
        throw Malformed{fmt::format("node {}: {} changes the element count", name, op)};
      Node v;
      v.kind = NodeKind::kView;
      v.op = "reshape";
      v.args = {x};
      v.origin = op;
      result = add_node(std::move(v), name, shape);
    } else if (kVendor.contains(op)) {
      Node v;
      v.kind = NodeKind::kVendor;
      v.op = op;
      v.origin = op;
      if (!n.contains("args") || !n["args"].is_array())
        throw Malformed{fmt::format("node {} ({}) has no args", name, op)};
      for (size_t i = 0; i < n["args"].size(); ++i) {
        const auto& a = n["args"][i];
        if (a.is_object() && a.contains("value") && a["value"].is_null()) {
          v.args.push_back(Operand{-2, 0});  // None (e.g. linear without bias)
          continue;
        }
        Operand o = operand(a, where);
        if (!o.is_scalar()) check_dtype(o, name);
        v.args.push_back(o);
      }
      if (op == "module") {
        std::string target = n.contains("kwargs") ? n["kwargs"].value("target", "") : "";
        if (target.empty()) throw Malformed{fmt::format("node {}: module without a target", name)};
        v.params["target"] = target;
        v.params["type"] = n["kwargs"].value("type", "");
      }
      result = add_node(std::move(v), name, shape);
    } else {
      throw Unsupported{
          fmt::format("op {} (node {}) is not handled by the builtin generator", op, name)};
    }
    const Value& rv = g_.values[result];
    if (rv.shape != shape)
      throw Malformed{fmt::format("node {} ({}): the IR says shape {}, the ops give {}", name, op,
                                  shape_str(shape), shape_str(rv.shape))};
    nodes_[name] = result;
  }

  int lower_pow(Operand a, Operand b, const std::string& name) {
    if (a.is_scalar() && b.is_scalar())
      throw Unsupported{fmt::format("node {}: pow of two scalars", name)};
    if (!a.is_scalar() && b.is_scalar()) {
      double e = b.scalar;
      if (e == 1.0) return ew("mul", {a, Operand{-1, 1.0}}, name, "pow");
      if (e == 0.5) return ew("sqrt", {a}, name, "pow");
      if (e == -0.5) return ew("rsqrt", {a}, name, "pow");
      if (std::floor(e) == e && std::fabs(e) >= 2 && std::fabs(e) <= 16) {
        // Exponentiation by squaring as multiplications: exact for integer powers, vectorises.
        int k = static_cast<int>(std::fabs(e));
        std::optional<Operand> acc;
        Operand base = a;
        int step = 0;
        while (k > 0) {
          if (k & 1) {
            if (!acc)
              acc = base;
            else
              acc = Operand{ew("mul", {*acc, base}, fmt::format("{}_p{}", name, step++), "pow"), 0};
          }
          k >>= 1;
          if (k)
            base = Operand{ew("mul", {base, base}, fmt::format("{}_p{}", name, step++), "pow"), 0};
        }
        if (e < 0) return ew("reciprocal", {*acc}, name, "pow");
        // Rename the last product to the node's name.
        g_.values[acc->value].name = name;
        return acc->value;
      }
      if (e == -1.0) return ew("reciprocal", {a}, name, "pow");
      return ew("pow", {a, b}, name, "pow");
    }
    if (a.is_scalar()) {
      if (a.scalar <= 0)
        throw Unsupported{
            fmt::format("node {}: pow with base {} and a tensor exponent", name, a.scalar)};
      return ew("exp2",
                {Operand{ew("mul", {b, Operand{-1, std::log2(a.scalar)}}, name + "_l", "pow"), 0}},
                name, "pow");
    }
    return ew("pow", {a, b}, name, "pow");
  }

  const json& ir_;
  const Skills& skills_;
  Graph g_;
  std::map<std::string, int> inputs_, attrs_, nodes_;
};

}  // namespace

util::Result<Lowered> lower(const nlohmann::json& ir, const Skills& skills) {
  try {
    Lowerer l(ir, skills);
    return Lowered{l.run(), ""};
  } catch (const Unsupported& u) {
    return Lowered{{}, u.reason};
  } catch (const Malformed& m) {
    return util::fail(util::ErrorKind::kBadInput, "malformed graph IR: " + m.message);
  } catch (const nlohmann::json::exception& e) {
    return util::fail(util::ErrorKind::kBadInput, std::string("malformed graph IR: ") + e.what());
  }
}

}  // namespace ok::generate
