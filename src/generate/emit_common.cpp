#include <fmt/format.h>

#include <cmath>

#include "generate/emit.hpp"

namespace ok::generate {

std::string literal(double v, const std::string& lang) {
  bool py = lang == "triton";
  if (std::isinf(v)) {
    if (py) return v > 0 ? "float(\"inf\")" : "float(\"-inf\")";
    return v > 0 ? "INFINITY" : "(-INFINITY)";
  }
  if (std::isnan(v)) return py ? "float(\"nan\")" : "NAN";
  std::string s = fmt::format("{:.9g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (!py) s += "f";
  if (v < 0) s = "(" + s + ")";
  return s;
}

std::string c_type(const std::string& dtype) {
  if (dtype == "int64") return "int64_t";
  if (dtype == "int32") return "int32_t";
  if (dtype == "bool") return "bool";
  return "float";
}

std::string render_op(const Skills& skills, const std::string& lang, const Node& n,
                      const std::vector<std::string>& operands, const std::string& coord) {
  auto it = skills.ops.find(n.op);
  if (it == skills.ops.end()) throw EmitError{fmt::format("op {} has no template", n.op)};
  const OpTemplate& t = it->second;
  if (static_cast<int>(operands.size()) != t.arity)
    throw EmitError{fmt::format("op {} takes {} operands, got {}", n.op, t.arity, operands.size())};
  nlohmann::json ctx = nlohmann::json::object();
  static const char* kNames[] = {"a", "b", "c"};
  for (size_t i = 0; i < operands.size(); ++i) ctx[kNames[i]] = operands[i];
  for (const auto& [k, v] : t.defaults.items()) ctx[k] = literal(v.get<double>(), lang);
  for (const auto& [k, v] : n.params.items())
    if (v.is_number()) ctx[k] = literal(v.get<double>(), lang);
  if (!coord.empty()) ctx["i"] = coord;
  std::string key = lang == "triton" ? "triton" : lang == "cuda" ? "cuda" : "cpp";
  auto r = render_template(t.expr.at(key), ctx);
  if (!r) throw EmitError{fmt::format("op {}: {}", n.op, r.error().message)};
  return "(" + *r + ")";
}

bool is_full(const Shape& ctx, const Shape& leaf) {
  auto strip = [](const Shape& s) {
    size_t k = 0;
    while (k < s.size() && s[k] == 1) ++k;
    return Shape(s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
  };
  return strip(ctx) == strip(leaf);
}

std::string leaf_index(const Shape& ctx, const Shape& leaf, const std::vector<Coord>& coords,
                       bool python) {
  const size_t n = ctx.size();
  Shape t = leaf;
  while (t.size() > n && t.front() == 1) t.erase(t.begin());
  while (t.size() < n) t.insert(t.begin(), 1);
  if (t.size() != n) throw EmitError{"a leaf has more dims than its context"};
  // Contiguous strides of the leaf.
  std::vector<int64_t> tst(n, 1);
  for (int d = static_cast<int>(n) - 2; d >= 0; --d) tst[d] = tst[d + 1] * t[d + 1];
  const char* div = python ? " // " : " / ";
  std::vector<std::string> terms;
  for (const auto& c : coords) {
    // Dims of this coordinate with extent > 1, and their local strides.
    std::vector<int> dims;
    for (int d = c.begin; d < c.end; ++d)
      if (ctx[d] != 1) dims.push_back(d);
    std::vector<int64_t> lst(dims.size(), 1);
    for (int k = static_cast<int>(dims.size()) - 2; k >= 0; --k)
      lst[k] = lst[k + 1] * ctx[dims[k + 1]];
    size_t k = 0;
    while (k < dims.size()) {
      if (t[dims[k]] == 1) {
        ++k;
        continue;
      }
      if (t[dims[k]] != ctx[dims[k]]) throw EmitError{"a leaf does not broadcast to its context"};
      size_t q = k;
      int64_t size = ctx[dims[k]];
      while (q + 1 < dims.size() && t[dims[q + 1]] != 1) {
        ++q;
        size *= ctx[dims[q]];
      }
      std::string x = c.expr;
      if (lst[q] != 1) x = fmt::format("({}{}{})", x, div, lst[q]);
      if (k != 0) x = fmt::format("({} % {})", x, size);
      if (tst[dims[q]] != 1) x = fmt::format("{} * {}", x, tst[dims[q]]);
      terms.push_back(x);
      k = q + 1;
    }
  }
  if (terms.empty()) return "0";
  std::string out;
  for (size_t i = 0; i < terms.size(); ++i) out += (i ? " + " : "") + terms[i];
  return terms.size() == 1 ? out : "(" + out + ")";
}

std::string Region::var(int value, Cls c) {
  return fmt::format("{}{}", c == Cls::kRow ? "v" : "p", value);
}

std::string Region::get(int value, Cls use) {
  Cls c = G_.cls.at(value);
  if (c == Cls::kRow) {
    auto it = row_known_.find(value);
    if (it != row_known_.end()) return it->second;
    std::string e = compute(value);
    row_known_[value] = e;
    return e;
  }
  if (!(*perrow_known_)[value]) {
    const Node& n = g_.nodes[g_.values[value].producer];
    if (n.kind == NodeKind::kReduce) {
      if (!hooks_.reduce)
        throw EmitError{fmt::format("reduction {} used before its pass", g_.values[value].name)};
      hooks_.reduce(value);
      (*perrow_known_)[value] = true;
    } else {
      compute(value);
    }
  }
  return hooks_.perrow_ref(value, use);
}

std::string Region::compute(int value) {
  const Node& n = g_.nodes[g_.values[value].producer];
  Cls c = G_.cls.at(value);
  // A value of fewer elements computed per element: its operands indexed at its readers' shape.
  auto bc = G_.broadcast.find(value);
  const Shape& shape = bc != G_.broadcast.end() ? bc->second : g_.values[value].shape;
  auto operand = [&](const Operand& a) {
    if (a.is_scalar()) return literal(a.scalar, lang_);
    if (G_.produces(a.value)) return get(a.value, c);
    return hooks_.load(a.value, shape, c);
  };
  if (n.kind == NodeKind::kView) {
    std::string e = operand(n.args[0]);
    if (c == Cls::kPerRow) {
      // Per-row views are aliases of a declared value: declare under the view's own name.
      hooks_.decl(value, e, c);
      (*perrow_known_)[value] = true;
    }
    return e;
  }
  if (n.kind != NodeKind::kElementwise)
    throw EmitError{fmt::format("node {} cannot be computed inline", g_.values[value].name)};
  std::vector<std::string> ops;
  for (const auto& a : n.args) ops.push_back(operand(a));
  // index_eq and any op reading {{i}}: the element's coordinate along params.index_dim.
  std::string coord;
  if (n.params.contains("index_dim")) {
    const int dim = n.params["index_dim"].get<int>();
    if (!hooks_.coord || dim < 0 || dim >= static_cast<int>(shape.size()))
      throw EmitError{
          fmt::format("node {}: no coordinate along dim {}", g_.values[value].name, dim)};
    coord = hooks_.coord(shape, dim, c);
  }
  std::string e = render_op(skills_, lang_, n, ops, coord);
  hooks_.decl(value, e, c);
  if (c == Cls::kPerRow) {
    (*perrow_known_)[value] = true;
    return hooks_.perrow_ref(value, c);
  }
  return var(value, c);
}

std::string py_name(const Graph& g, int value) {
  const Value& v = g.values[value];
  if (v.kind == ValueKind::kInput) return v.name;
  return fmt::format("_ok_v{}", value);
}

std::vector<int> online_sums(const KernelGroup& G, int max) {
  std::vector<int> out;
  for (const auto& [sum, on] : G.online)
    if (on.max == max) out.push_back(sum);
  return out;
}

std::string reduce_identity(ReduceKind k, const std::string& lang) {
  switch (k) {
    case ReduceKind::kSum:
      return literal(0.0, lang);
    case ReduceKind::kProd:
      return literal(1.0, lang);
    case ReduceKind::kMax:
      return literal(-INFINITY, lang);
    case ReduceKind::kMin:
      return literal(INFINITY, lang);
    default:
      throw EmitError{"no identity for an arg reduction"};
  }
}

std::string spell(const ReduceSpelling& s, ReduceKind k, const std::string& a,
                  const std::string& b) {
  const char* pattern = nullptr;
  switch (k) {
    case ReduceKind::kSum:
      pattern = s.sum;
      break;
    case ReduceKind::kProd:
      pattern = s.prod;
      break;
    case ReduceKind::kMax:
      pattern = s.max;
      break;
    case ReduceKind::kMin:
      pattern = s.min;
      break;
    default:
      throw EmitError{s.no_arg};
  }
  return fmt::format(fmt::runtime(pattern), a, b);
}

std::string render_skill(const Skills& skills, const std::string& backend,
                         const std::string& pattern, const std::string& name,
                         const nlohmann::json& context) {
  const Skill* s = skills.find(backend, pattern);
  if (!s) throw EmitError{fmt::format("no {} skill for {}", pattern, backend)};
  auto it = s->templates.find(name);
  if (it == s->templates.end())
    throw EmitError{fmt::format("skill {} has no template {}", s->id, name)};
  auto r = render_template(it->second, context);
  if (!r) throw EmitError{fmt::format("skill {} template {}: {}", s->id, name, r.error().message)};
  return *r;
}

std::string lines_at(const std::vector<std::string>& lines, int spaces) {
  std::string pad(static_cast<size_t>(spaces), ' ');
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + pad + lines[i];
  return out;
}

void for_each_param(
    const KernelGroup& G,
    const std::function<void(int value, const std::string& name, bool output)>& each) {
  for (size_t k = 0; k < G.leaves.size(); ++k) each(G.leaves[k], fmt::format("in{}", k), false);
  for (size_t k = 0; k < G.outputs.size(); ++k) each(G.outputs[k], fmt::format("out{}", k), true);
}

void pointwise_outputs(const Graph& g, const KernelGroup& G, const Skills& skills,
                       const std::string& lang, Region::Hooks hooks,
                       const std::function<void(int value, const std::string& expr)>& store) {
  hooks.perrow_ref = [](int, Cls) -> std::string {
    throw EmitError{"per-row value in a pointwise group"};
  };
  std::map<int, bool> perrow_known;
  Region region(g, G, skills, lang, &perrow_known, std::move(hooks));
  for (int v : G.outputs) store(v, region.get(v, Cls::kRow));
}

nlohmann::json group_params(const KernelGroup& G, const nlohmann::json& params) {
  return params.value(G.row ? "row" : "pointwise", nlohmann::json::object());
}

std::string indent(const std::string& text, int spaces) {
  std::string pad(static_cast<size_t>(spaces), ' ');
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    out += (line.empty() ? "" : pad + line) + "\n";
    start = end + 1;
  }
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

double log2_distance(double a, double b) {
  return std::fabs(std::log2(a) - std::log2(b));
}

int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace ok::generate

namespace ok::generate {

std::string index_of(const Graph& g, const KernelGroup& G, int leaf, const Shape& ctx, Cls cls,
                     const IndexSpace& sp, bool python) {
  return shape_index(G, g.values[leaf].shape, ctx, cls, sp, python);
}

std::string coord_of(const KernelGroup& G, const Shape& ctx, int dim, Cls cls, const IndexSpace& sp,
                     bool python) {
  // The flat index of a leaf that varies along `dim` only is that dim's coordinate.
  Shape unit(ctx.size(), 1);
  unit[static_cast<size_t>(dim)] = ctx[static_cast<size_t>(dim)];
  if (ctx[static_cast<size_t>(dim)] == 1) return "0";
  return shape_index(G, unit, ctx, cls, sp, python);
}

std::string shape_index(const KernelGroup& G, const Shape& ls, const Shape& ctx, Cls cls,
                        const IndexSpace& sp, bool python) {
  const int rank = static_cast<int>(ctx.size());
  if (cls == Cls::kRow) {
    if (is_full(ctx, ls)) return sp.lin_row;
    if (ctx == G.base && !sp.row_coords.empty()) return leaf_index(ctx, ls, sp.row_coords, python);
    return leaf_index(ctx, ls, {Coord{sp.lin_row, 0, rank}}, python);
  }
  if (is_full(ctx, ls)) return sp.lin_perrow;
  Shape keep = G.base;
  for (int d = G.red_begin; d < G.red_end; ++d) keep[d] = 1;
  if (G.row && ctx == keep && !sp.perrow_coords.empty())
    return leaf_index(ctx, ls, sp.perrow_coords, python);
  return leaf_index(ctx, ls, {Coord{sp.lin_perrow, 0, rank}}, python);
}

IndexSpace row_space(const KernelGroup& G, const std::string& o, const std::string& r,
                     const std::string& j, const std::string& lin_row,
                     const std::string& lin_perrow) {
  IndexSpace sp;
  sp.lin_row = lin_row;
  sp.lin_perrow = lin_perrow;
  const int n = static_cast<int>(G.base.size());
  sp.row_coords = {Coord{o, 0, G.red_begin}, Coord{r, G.red_begin, G.red_end},
                   Coord{j, G.red_end, n}};
  sp.perrow_coords = {Coord{o, 0, G.red_begin}, Coord{j, G.red_end, n}};
  return sp;
}

}  // namespace ok::generate
