#include "generate/graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "generate/lowerer.hpp"
#include "util/enum_names.hpp"

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

std::vector<std::string> Graph::forward_args() const {
  std::vector<std::string> out;
  for (int v : inputs) out.push_back(values[v].name);
  for (const auto& c : constants)
    out.insert(
        out.begin() + std::min<size_t>(static_cast<size_t>(std::max(c.index, 0)), out.size()),
        c.name);
  return out;
}

const char* reduce_name(ReduceKind k) {
  static constexpr util::EnumName<ReduceKind> kNames[] = {
      {ReduceKind::kSum, "sum"},       {ReduceKind::kMax, "max"},
      {ReduceKind::kMin, "min"},       {ReduceKind::kProd, "prod"},
      {ReduceKind::kArgmax, "argmax"}, {ReduceKind::kArgmin, "argmin"}};
  return util::name_of(kNames, k, "?");
}

namespace lowering {

namespace {

using nlohmann::json;

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

// {"scalar": ...} as a number: "inf", "-inf" as the worker may spell them.
std::optional<double> scalar_value(const json& s) {
  if (s.is_boolean()) return s.get<bool>() ? 1.0 : 0.0;
  if (s.is_number()) return s.get<double>();
  if (s.is_string()) {
    std::string t = s.get<std::string>();
    if (t == "inf" || t == "Infinity") return INFINITY;
    if (t == "-inf" || t == "-Infinity") return -INFINITY;
  }
  return std::nullopt;
}

}  // namespace

Graph Lowerer::run() {
  if (!ir_.is_object()) throw Malformed{"the graph IR is not a JSON object"};
  if (ir_.contains("traceable") && ir_["traceable"].is_boolean() && !ir_["traceable"].get<bool>()) {
    std::string why = ir_.contains("reason") && ir_["reason"].is_string()
                          ? ir_["reason"].get<std::string>()
                          : "no reason given";
    throw Unsupported{fmt::format("the reference could not be traced: {}", why)};
  }
  for (const char* key : {"inputs", "nodes", "outputs"})
    if (!ir_.contains(key) || !ir_[key].is_array())
      throw Malformed{fmt::format("the graph IR has no \"{}\" list", key)};
  read_inputs_and_attrs();
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

void Lowerer::read_inputs_and_attrs() {
  for (const auto& in : ir_["inputs"]) {
    std::string name = in.value("name", "");
    if (name.empty()) throw Malformed{"an input has no name"};
    Value v{ValueKind::kInput, name, to_shape(in.value("shape", json()), "input " + name),
            in.value("dtype", "float32"), -1};
    int id = add_value(std::move(v));
    inputs_[name] = id;
    g_.inputs.push_back(id);
  }
  if (ir_.contains("constants") && ir_["constants"].is_array()) {
    for (const auto& c : ir_["constants"]) {
      std::string name = c.value("name", "");
      auto value = c.contains("value") ? scalar_value(c["value"]) : std::nullopt;
      if (name.empty() || !value) throw Malformed{"a constant lacks a name or a numeric value"};
      g_.constants.push_back(Constant{name, c.value("index", 0), *value});
    }
    std::sort(g_.constants.begin(), g_.constants.end(),
              [](const Constant& a, const Constant& b) { return a.index < b.index; });
  }
  if (!ir_.contains("attrs") || !ir_["attrs"].is_array()) return;
  for (const auto& a : ir_["attrs"]) {
    std::string name = a.value("name", "");
    if (name.empty()) throw Malformed{"an attr has no name"};
    Value v{ValueKind::kAttr, name, to_shape(a.value("shape", json()), "attr " + name),
            a.value("dtype", "float32"), -1};
    attrs_[name] = add_value(std::move(v));
  }
}

void Lowerer::lower_node(const json& j) {
  IrNode n{j, j.value("name", ""), j.value("op", ""), "", {}};
  if (n.name.empty() || n.op.empty()) throw Malformed{"a node lacks a name or an op"};
  n.where = "node " + n.name;
  std::string dtype = j.value("dtype", "float32");
  n.shape = to_shape(j.value("shape", json::array()), n.where);
  if (n.op == kUnknownOp) {
    std::string target = j.contains("kwargs") ? j["kwargs"].value("target", "?") : "?";
    throw Unsupported{
        fmt::format("op {} (node {}) is not one the builtin generator knows", target, n.name)};
  }
  bool is_arg = n.op == "argmax" || n.op == "argmin";
  if (dtype != "float32" && !(is_arg && dtype == "int64"))
    throw Unsupported{fmt::format("unsupported dtype {} (node {}, op {}, shape {})", dtype, n.name,
                                  n.op, shape_str(n.shape))};
  auto family = skills_.ir_family.find(n.op);
  Lowering lowering = family == skills_.ir_family.end() ? nullptr : find_lowering(family->second);
  if (!lowering)
    throw Unsupported{
        fmt::format("op {} (node {}) is not handled by the builtin generator", n.op, n.name)};
  int result = lowering(*this, n);
  const Value& rv = g_.values[result];
  if (rv.shape != n.shape)
    throw Malformed{fmt::format("node {} ({}): the IR says shape {}, the ops give {}", n.name, n.op,
                                shape_str(n.shape), shape_str(rv.shape))};
  nodes_[n.name] = result;
}

int Lowerer::add_value(Value v) {
  g_.values.push_back(std::move(v));
  return static_cast<int>(g_.values.size()) - 1;
}

int Lowerer::add_node(Node n, const std::string& name, Shape shape, std::string dtype) {
  int vid = add_value(Value{ValueKind::kNode, name, std::move(shape), std::move(dtype),
                            static_cast<int>(g_.nodes.size())});
  n.out = vid;
  if (n.kind == NodeKind::kElementwise && !skills_.ops.contains(n.op))
    throw Unsupported{fmt::format("op {} (node {}) has no template in the op table", n.op, name)};
  g_.nodes.push_back(std::move(n));
  return vid;
}

int Lowerer::view(Operand x, Shape shape, const std::string& name, const std::string& origin) {
  Node v;
  v.kind = NodeKind::kView;
  v.op = "reshape";
  v.args = {x};
  v.origin = origin;
  // A view keeps its tensor's dtype (an int64 target seen as [N, 1] stays int64).
  std::string dtype = x.is_scalar() ? "float32" : g_.values[x.value].dtype;
  return add_node(std::move(v), name, std::move(shape), std::move(dtype));
}

const Shape& Lowerer::shape_of(const Operand& o) const {
  static const Shape kScalar{};
  return o.is_scalar() ? kScalar : g_.values[o.value].shape;
}

void Lowerer::check_dtype(const Operand& o, const std::string& node) const {
  if (o.is_scalar()) return;
  const Value& v = g_.values[o.value];
  // bool tensors are read as 0/1; the planner generates them only as a scan's mask.
  if (v.dtype != "float32" && v.dtype != "bool")
    throw Unsupported{fmt::format("unsupported dtype {} ({} {} used by node {})", v.dtype,
                                  v.kind == ValueKind::kInput  ? "input"
                                  : v.kind == ValueKind::kAttr ? "attr"
                                                               : "node",
                                  v.name, node)};
}

Operand Lowerer::operand(const json& a, const std::string& where) {
  if (a.is_number()) return Operand::number(a.get<double>());
  if (a.is_boolean()) return Operand::number(a.get<bool>() ? 1.0 : 0.0);
  if (!a.is_object()) throw Malformed{fmt::format("{}: an argument is not an object", where)};
  const std::pair<const char*, const std::map<std::string, int>*> named[] = {
      {"node", &nodes_}, {"input", &inputs_}, {"attr", &attrs_}};
  for (const auto& [key, table] : named) {
    if (!a.contains(key)) continue;
    auto it = table->find(a[key].get<std::string>());
    if (it == table->end())
      throw Malformed{fmt::format("{}: unknown {} {}", where, key, a[key].dump())};
    return Operand::tensor(it->second);
  }
  if (a.contains("scalar")) {
    if (auto v = scalar_value(a["scalar"])) return Operand::number(*v);
    throw Malformed{fmt::format("{}: scalar {} is not a number", where, a["scalar"].dump())};
  }
  throw Unsupported{fmt::format("{}: argument {} is not a tensor or a number", where, a.dump())};
}

std::optional<Operand> Lowerer::attr(const std::string& path) const {
  auto it = attrs_.find(path);
  if (it == attrs_.end()) return std::nullopt;
  return Operand::tensor(it->second);
}

Operand Lowerer::tensor_arg(const IrNode& n, size_t i) {
  if (!n.json.contains("args") || n.json["args"].size() <= i)
    throw Malformed{fmt::format("node {} ({}) lacks argument {}", n.name, n.op, i)};
  Operand o = operand(n.json["args"][i], n.where);
  if (o.is_scalar())
    throw Unsupported{fmt::format("node {} ({}): argument {} is a scalar", n.name, n.op, i)};
  check_dtype(o, n.name);
  return o;
}

std::optional<json> Lowerer::param(const IrNode& n, const std::string& name, size_t pos) {
  const json& j = n.json;
  const json* v = nullptr;
  if (j.contains("kwargs") && j["kwargs"].is_object() && j["kwargs"].contains(name))
    v = &j["kwargs"][name];
  else if (j.contains("args") && j["args"].is_array() && j["args"].size() > pos)
    v = &j["args"][pos];
  if (!v || v->is_null()) return std::nullopt;
  if (v->is_object() && v->contains("value")) {
    if ((*v)["value"].is_null()) return std::nullopt;
    return (*v)["value"];
  }
  if (v->is_object() && v->contains("ints")) return (*v)["ints"];
  return *v;
}

double Lowerer::scalar_param(const IrNode& n, const std::string& name, size_t pos, double dflt) {
  auto p = param(n, name, pos);
  if (!p) return dflt;
  Operand o = operand(*p, n.where);
  if (!o.is_scalar())
    throw Unsupported{fmt::format("{}: tensor-valued {} is not handled", n.where, name)};
  return o.scalar;
}

int Lowerer::ew(const std::string& op, std::vector<Operand> args, const std::string& name,
                const std::string& origin, json params) {
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

int Lowerer::reduce(ReduceKind k, Operand x, std::vector<int> dims, bool keepdim,
                    const std::string& name, const std::string& origin) {
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
  // Over dims of extent 1 a sum, max, min or prod is its input: a view, which fuses.
  const bool arg = k == ReduceKind::kArgmax || k == ReduceKind::kArgmin;
  if (!arg && numel(s) > 0 && reduced_size(x, dims) == 1) return view(x, out, name, origin);
  Node n;
  n.kind = NodeKind::kReduce;
  n.op = reduce_name(k);
  n.reduce = k;
  n.args = {x};
  n.dims = std::move(dims);
  n.origin = origin;
  return add_node(std::move(n), name, out, arg ? "int64" : "float32");
}

std::vector<int> Lowerer::dims_of(const IrNode& n, const Operand& x, size_t pos) {
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
      throw Malformed{fmt::format("node {}: dim {} is not a list of ints", n.name, p->dump())};
  }
  for (int& d : dims) {
    if (d < 0) d += rank;
    if (d < 0 || d >= rank)
      throw Malformed{
          fmt::format("node {}: dim out of range for shape {}", n.name, shape_str(shape_of(x)))};
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  for (size_t i = 1; i < dims.size(); ++i)
    if (dims[i] != dims[i - 1] + 1)
      throw Unsupported{fmt::format("node {}: reduction over non-adjacent dims of shape {}", n.name,
                                    shape_str(shape_of(x)))};
  return dims;
}

int64_t Lowerer::reduced_size(const Operand& x, const std::vector<int>& dims) const {
  const Shape& s = shape_of(x);
  if (dims.empty()) return numel(s);
  int64_t r = 1;
  for (int d : dims) r *= s[d];
  return r;
}

bool Lowerer::keepdim_of(const IrNode& n) {
  auto p = param(n, "keepdim", kKeywordOnly);
  if (!p) return false;
  if (p->is_boolean()) return p->get<bool>();
  if (p->is_object() && p->contains("scalar")) return (*p)["scalar"].get<double>() != 0;
  return false;
}

}  // namespace lowering

util::Result<Lowered> lower(const nlohmann::json& ir, const Skills& skills) {
  try {
    lowering::Lowerer l(ir, skills);
    return Lowered{l.run(), ""};
  } catch (const lowering::Unsupported& u) {
    return Lowered{{}, u.reason};
  } catch (const lowering::Malformed& m) {
    return util::fail(util::ErrorKind::kBadInput, "malformed graph IR: " + m.message);
  } catch (const nlohmann::json::exception& e) {
    return util::fail(util::ErrorKind::kBadInput, std::string("malformed graph IR: ") + e.what());
  }
}

}  // namespace ok::generate
