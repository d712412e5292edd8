// CPU backend: C++ compiled with openkernel_worker.native.compile_cpp, OpenMP + SIMD loops.
#include <fmt/format.h>

#include <algorithm>

#include "generate/emit.hpp"
#include "util/strings.hpp"

namespace ok::generate {

namespace {

using nlohmann::json;

struct Signature {
  std::map<int, std::string> names;  // value -> in<k> / out<k>
  std::string text;
  std::vector<std::string> py_args;
};

Signature signature(const Graph& g, const KernelGroup& G) {
  Signature s;
  std::vector<std::string> parts;
  for_each_param(G, [&](int v, const std::string& name, bool output) {
    s.names[v] = name;
    parts.push_back(fmt::format("{}{}* __restrict__ {}", output ? "" : "const ",
                                c_type(g.values[v].dtype), name));
    s.py_args.push_back(fmt::format("_ok_ptr({})", py_name(g, v)));
  });
  s.text = util::join(parts, ", ");
  return s;
}

// The first dim k such that every broadcast leaf read in the base shape is constant or contiguous
// over dims [k, n); n when there is none.
int choose_split(const Graph& g, const KernelGroup& G) {
  const int n = static_cast<int>(G.base.size());
  std::vector<Shape> uses;
  for (int ni : G.nodes) {
    const Node& node = g.nodes[ni];
    // A value computed per element at its readers' shape reads its leaves against that shape.
    auto bc = G.broadcast.find(node.out);
    const Shape& ctx = bc != G.broadcast.end() ? bc->second : g.values[node.out].shape;
    for (const auto& a : node.args) {
      if (a.is_scalar() || G.produces(a.value)) continue;
      const Shape& ls = g.values[a.value].shape;
      if (ctx != G.base || is_full(ctx, ls)) continue;
      Shape t = ls;
      while (static_cast<int>(t.size()) < n) t.insert(t.begin(), 1);
      uses.push_back(t);
    }
  }
  for (int k = 0; k <= n; ++k) {
    bool ok = true;
    for (const auto& t : uses) {
      bool any_var = false, any_const = false;
      for (int d = k; d < n; ++d) {
        if (G.base[d] == 1) continue;
        (t[d] == 1 ? any_const : any_var) = true;
      }
      if (any_var && any_const) ok = false;
    }
    if (ok) return k;
  }
  return n;
}

// The OpenMP reduction operator, and the loop's accumulation statement ({0} the accumulator).
constexpr ReduceSpelling kOmpOp{"+", "*", "max", "min", "no OpenMP reduction for an arg reduction"};
constexpr ReduceSpelling kAccumulate{"{0} += {1};", "{0} *= {1};", "{0} = ok_max({0}, {1});",
                                     "{0} = ok_min({0}, {1});",
                                     "no accumulation for an arg reduction"};

KernelCode pointwise(const Graph& g, const KernelGroup& G, const std::string& name,
                     const Signature& sig, const Skills& skills, const json& params) {
  const int n = static_cast<int>(G.base.size());
  int k = choose_split(g, G);
  bool flat = k == 0 || k == n;
  IndexSpace sp;
  sp.lin_row = "i";
  if (flat)
    sp.row_coords = {Coord{"i", 0, n}};
  else
    sp.row_coords = {Coord{"o", 0, k}, Coord{"c", k, n}};
  std::vector<std::string> lines;
  Region::Hooks h;
  h.load = [&](int v, const Shape& ctx, Cls c) {
    return fmt::format("{}[{}]", sig.names.at(v), index_of(g, G, v, ctx, c, sp, false));
  };
  h.decl = [&](int v, const std::string& e, Cls) {
    lines.push_back(fmt::format("const float {} = {};", Region::var(v, Cls::kRow), e));
  };
  h.coord = [&](const Shape& ctx, int dim, Cls c) { return coord_of(G, ctx, dim, c, sp, false); };
  pointwise_outputs(g, G, skills, "cpp", h, [&](int v, const std::string& e) {
    lines.push_back(fmt::format("{}[i] = {};", sig.names.at(v), e));
  });
  json ctx = {{"name", name},
              {"signature", sig.text},
              {"schedule", params.value("schedule", "static")},
              {"work", std::to_string(G.full)}};
  if (flat) {
    ctx["n"] = std::to_string(G.full);
    ctx["body"] = lines_at(lines, 4);
  } else {
    int64_t cols = 1;
    for (int d = k; d < n; ++d) cols *= G.base[d];
    ctx["rows"] = std::to_string(G.full / cols);
    ctx["cols"] = std::to_string(cols);
    ctx["body"] = lines_at(lines, 6);
  }
  return {render_skill(skills, "cpu", "pointwise", flat ? "flat" : "rows", ctx), {}};
}

// A row group's kernel, or (product >= 0: a row epilogue, inner 1) its passes over the rows of a
// GEMM task, the product's value read from the task's row buffer.
KernelCode row(const Graph& g, const KernelGroup& G, const std::string& name,
               const std::map<int, std::string>& names, const std::string& signature,
               const Skills& skills, const json& params, int product = -1) {
  const bool two_d = G.inner > 1;
  auto at = [&names, product](int v, const std::string& idx) {
    return v == product ? fmt::format("ep_row[{} - ep_i0]", idx)
                        : fmt::format("{}[{}]", names.at(v), idx);
  };
  const std::string inner = std::to_string(G.inner);
  IndexSpace sp = row_space(G, "o", "r", two_d ? "j" : "0", "i",
                            two_d ? fmt::format("(o * {} + j)", inner) : "o");
  std::map<int, bool> perrow_known;
  auto pref = [&](int v) { return two_d ? fmt::format("p{}[jj]", v) : fmt::format("p{}", v); };
  auto hooks = [&](std::vector<std::string>& lines) {
    Region::Hooks h;
    h.load = [&g, &G, &at, &sp](int v, const Shape& ctx, Cls c) {
      return at(v, index_of(g, G, v, ctx, c, sp, false));
    };
    h.decl = [&lines, two_d](int v, const std::string& e, Cls c) {
      if (c == Cls::kRow)
        lines.push_back(fmt::format("const float v{} = {};", v, e));
      else if (two_d)
        lines.push_back(fmt::format("p{}[jj] = {};", v, e));
      else
        lines.push_back(fmt::format("const float p{} = {};", v, e));
    };
    h.perrow_ref = [pref](int v, Cls) { return pref(v); };
    h.coord = [&G, &sp](const Shape& ctx, int dim, Cls c) {
      return coord_of(G, ctx, dim, c, sp, false);
    };
    return h;
  };
  auto perrow_nodes = [&](int level, std::vector<std::string>& lines) {
    Region region(g, G, skills, "cpp", &perrow_known, hooks(lines));
    for (int ni : G.nodes) {
      const Node& n = g.nodes[ni];
      if (n.kind == NodeKind::kReduce || G.cls.at(n.out) != Cls::kPerRow) continue;
      if (G.plevel.at(n.out) == level) region.get(n.out, Cls::kPerRow);
    }
  };
  std::vector<std::string> arrays, prologue;
  if (two_d)
    for (const auto& [v, c] : G.cls)
      if (c == Cls::kPerRow) arrays.push_back(fmt::format("float p{}[TJ];", v));
  perrow_nodes(-1, prologue);
  json passes = json::array();
  for (int k = 0; k < G.passes; ++k) {
    std::vector<std::string> init, body, epilogue;
    std::string clauses;
    Region region(g, G, skills, "cpp", &perrow_known, hooks(body));
    for (int ni : G.nodes) {
      const Node& n = g.nodes[ni];
      if (n.kind != NodeKind::kReduce || G.level.at(n.out) != k) continue;
      int x = n.args[0].value;
      std::string e = G.produces(x) ? region.get(x, Cls::kRow) : at(x, "i");
      std::string ident = reduce_identity(n.reduce, "cpp");
      if (two_d) {
        init.push_back(fmt::format("p{}[jj] = {};", n.out, ident));
      } else {
        init.push_back(fmt::format("float p{} = {};", n.out, ident));
        clauses += fmt::format(" reduction({}:p{})", spell(kOmpOp, n.reduce), n.out);
      }
      body.push_back(spell(kAccumulate, n.reduce, pref(n.out), e));
    }
    for (int ni : G.nodes)
      if (g.nodes[ni].kind == NodeKind::kReduce && G.level.at(g.nodes[ni].out) == k)
        perrow_known[g.nodes[ni].out] = true;
    perrow_nodes(k, epilogue);
    passes.push_back({{"init", lines_at(init, two_d ? 6 : 4)},
                      {"clauses", clauses},
                      {"body", lines_at(body, two_d ? 8 : 6)},
                      {"epilogue", lines_at(epilogue, two_d ? 6 : 4)}});
  }
  json final_pass = json::array();
  std::vector<std::string> fbody, stores;
  {
    Region region(g, G, skills, "cpp", &perrow_known, hooks(fbody));
    for (int v : G.outputs) {
      if (G.cls.at(v) == Cls::kRow) {
        std::string e = region.get(v, Cls::kRow);
        fbody.push_back(fmt::format("{}[i] = {};", names.at(v), e));
      }
    }
  }
  if (!fbody.empty()) final_pass.push_back({{"body", lines_at(fbody, two_d ? 8 : 6)}});
  {
    std::vector<std::string> pre;
    Region region(g, G, skills, "cpp", &perrow_known, hooks(pre));
    for (int v : G.outputs) {
      if (G.cls.at(v) != Cls::kPerRow) continue;
      std::string e = region.get(v, Cls::kPerRow);
      stores.push_back(fmt::format("{}[{}] = {};", names.at(v), sp.lin_perrow, e));
    }
    if (!pre.empty()) throw EmitError{"a per-row output was not computed before the stores"};
  }
  json ctx = {{"name", name},
              {"signature", signature},
              {"kernel", product < 0},
              {"schedule", params.value("schedule", "static")},
              {"work", std::to_string(G.full)},
              {"outer", std::to_string(G.outer)},
              {"red", std::to_string(G.red)},
              {"inner", inner},
              {"tile", std::to_string(params.value("tile", 64))},
              {"arrays", lines_at(arrays, 4)},
              {"prologue", lines_at(prologue, two_d ? 6 : 4)},
              {"passes", passes},
              {"final", final_pass},
              {"stores", lines_at(stores, two_d ? 6 : 4)}};
  return {render_skill(skills, "cpu", "row", two_d ? "row2d" : "row1d", ctx), {}};
}

}  // namespace

KernelCode emit_cpu(const Graph& g, const KernelGroup& G, int index, const Skills& skills,
                    const json& params) {
  std::string name = fmt::format("ok_kernel_{}", index);
  Signature sig = signature(g, G);
  const json own = group_params(G, params);
  KernelCode code = G.row ? row(g, G, name, sig.names, sig.text, skills, own)
                          : pointwise(g, G, name, sig, skills, own);
  code.launch.push_back(fmt::format("_ok_lib.{}({})", name, util::join(sig.py_args, ", ")));
  return code;
}

std::string cpu_row_epilogue(const Graph& g, const KernelGroup& G, int product,
                             const Skills& skills, const std::map<int, std::string>& names) {
  if (G.inner != 1) throw EmitError{"a row epilogue needs rows along the product's last dim"};
  return row(g, G, "", names, "", skills, json::object(), product).device;
}

}  // namespace ok::generate
