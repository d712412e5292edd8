// Triton backend: @triton.jit kernels over the flat index (pointwise) or rows (row groups).
#include <fmt/format.h>

#include <regex>

#include "generate/emit.hpp"

namespace ok::generate {

namespace {

using nlohmann::json;

struct Sig {
  std::map<int, std::string> names;
  std::string text;  // "in0, in1, out0, "
  std::string args;  // "x, _ok_v1, _ok_v5, "
};

Sig signature(const Graph& g, const KernelGroup& G) {
  Sig s;
  for_each_param(G, [&](int v, const std::string& name, bool) {
    s.names[v] = name;
    s.text += name + ", ";
    s.args += py_name(g, v) + ", ";
  });
  return s;
}

bool uses(const std::string& e, const char* name) {
  return std::regex_search(e, std::regex(std::string("\\b") + name + "\\b"));
}

// Python lines to concatenate: lines_at() with a newline after the last line as well.
std::string block_at(const std::vector<std::string>& lines, int spaces) {
  return lines.empty() ? "" : lines_at(lines, spaces) + "\n";
}

// The launch statement in forward: the pattern's "launch" template without its trailing newlines.
std::string launch_statement(const Skills& skills, const std::string& pattern, const json& ctx) {
  std::string launch = render_skill(skills, "triton", pattern, "launch", ctx);
  while (!launch.empty() && launch.back() == '\n') launch.pop_back();
  return launch;
}

// Loads a leaf once per region and index; `mask` empty for a scalar load.
struct Loader {
  std::vector<std::string>* lines;
  std::map<std::string, std::string> cache;
  int counter = 0;
  std::string load(const std::string& ptr, const std::string& idx, const std::string& mask) {
    std::string key = ptr + "|" + idx;
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    std::string name = fmt::format("x{}_{}", ptr, counter++);
    std::string addr = idx == "0" ? ptr : fmt::format("{} + {}", ptr, idx);
    if (mask.empty())
      lines->push_back(fmt::format("{} = tl.load({})", name, addr));
    else
      lines->push_back(fmt::format("{} = tl.load({}, mask={}, other=0.0)", name, addr, mask));
    cache[key] = name;
    return name;
  }
};

// Masked lanes compute indices past the end (up to a block beyond): int32 only with room for that.
bool needs_int64(int64_t last_index) {
  return last_index >= (int64_t{1} << 31) - 1;
}

// The reduction over an axis ({0} the values, {1} the axis), and the combine of two partial values.
constexpr ReduceSpelling kCombine{"{0} + {1}", "{0} * {1}", "tl.maximum({0}, {1})",
                                  "tl.minimum({0}, {1})",
                                  "arg reductions are not generated for Triton"};

KernelCode pointwise(const Graph& g, const KernelGroup& G, const std::string& name, const Sig& sig,
                     const Skills& skills, const json& params) {
  IndexSpace sp;
  sp.lin_row = "i";
  std::vector<std::string> lines;
  Loader loader{&lines};
  Region::Hooks h;
  h.load = [&](int v, const Shape& ctx, Cls c) {
    std::string idx = index_of(g, G, v, ctx, c, sp, true);
    return loader.load(sig.names.at(v), idx, uses(idx, "i") ? "mask" : "");
  };
  h.decl = [&](int v, const std::string& e, Cls) {
    lines.push_back(fmt::format("v{} = {}", v, e));
  };
  h.coord = [&](const Shape& ctx, int dim, Cls c) { return coord_of(G, ctx, dim, c, sp, true); };
  pointwise_outputs(g, G, skills, "triton", h, [&](int v, const std::string& e) {
    lines.push_back(fmt::format("tl.store({} + i, {}, mask=mask)", sig.names.at(v), e));
  });
  int64_t block = params.value("BLOCK", 1024);
  json ctx = {{"name", name},
              {"signature", sig.text},
              {"cast", needs_int64(G.full + block) ? ".to(tl.int64)" : ""},
              {"n", std::to_string(G.full)},
              {"body", block_at(lines, 4)},
              {"args", sig.args},
              {"BLOCK", std::to_string(block)},
              {"num_warps", std::to_string(params.value("num_warps", 4))}};
  return {render_skill(skills, "triton", "pointwise", "kernel", ctx) + "\n",
          {launch_statement(skills, "pointwise", ctx)}};
}

KernelCode row(const Graph& g, const KernelGroup& G, const std::string& name, const Sig& sig,
               const Skills& skills, const json& params) {
  const bool two_d = G.inner > 1;
  const bool tile = params.value("mode", std::string("loop")) == "tile";
  const std::string red = std::to_string(G.red), inner = std::to_string(G.inner);
  int64_t block_r = tile ? next_pow2(G.red) : params.value("BLOCK_R", int64_t{1024});
  if (tile && params.contains("BLOCK_R") && params["BLOCK_R"].get<int64_t>() > block_r)
    block_r = params["BLOCK_R"].get<int64_t>();
  int64_t block_j = two_d ? params.value("BLOCK_J", int64_t{64}) : 1;
  int64_t jt = (G.inner + block_j - 1) / block_j;
  IndexSpace sp =
      row_space(G, "o", "r", "j", "i", two_d ? fmt::format("(o * {} + jj)", inner) : "o");
  std::map<int, bool> perrow_known;

  auto row_mask = [&](const std::string& idx) -> std::string {
    bool vi = uses(idx, "i"), vr = uses(idx, "r"), vj = uses(idx, "j");
    if (!two_d) return vi || vr ? "mask" : "";
    if (vi || (vr && vj)) return "mask";
    if (vr) return "rm";
    if (vj) return "jm[None, :]";
    return "";
  };
  auto hooks = [&](std::vector<std::string>& lines, Loader& loader) {
    Region::Hooks h;
    h.load = [&, two_d](int v, const Shape& ctx, Cls c) {
      std::string idx = index_of(g, G, v, ctx, c, sp, true);
      std::string m = c == Cls::kRow ? row_mask(idx) : (two_d && uses(idx, "jj") ? "jm" : "");
      return loader.load(sig.names.at(v), idx, m);
    };
    h.decl = [&lines](int v, const std::string& e, Cls c) {
      lines.push_back(fmt::format("{} = {}", Region::var(v, c), e));
    };
    h.perrow_ref = [two_d](int v, Cls use) {
      return two_d && use == Cls::kRow ? fmt::format("p{}[None, :]", v) : fmt::format("p{}", v);
    };
    h.coord = [&](const Shape& ctx, int dim, Cls c) { return coord_of(G, ctx, dim, c, sp, true); };
    return h;
  };
  auto reduced_input = [&](Region& region, Loader& loader, const Node& n) {
    int x = n.args[0].value;
    if (G.produces(x)) return region.get(x, Cls::kRow);
    std::string idx = index_of(g, G, x, g.values[x].shape, Cls::kRow, sp, true);
    return loader.load(sig.names.at(x), idx, row_mask(idx));
  };
  auto masked = [](ReduceKind k, const std::string& e) {
    return fmt::format("tl.where(mask, {}, {})", e, reduce_identity(k, "triton"));
  };
  auto store_perrow = [&](std::vector<std::string>& lines, Region& region) {
    for (int v : G.outputs) {
      if (G.cls.at(v) != Cls::kPerRow) continue;
      std::string e = region.get(v, Cls::kPerRow);
      if (two_d)
        lines.push_back(
            fmt::format("tl.store({} + {}, {}, mask=jm)", sig.names.at(v), sp.lin_perrow, e));
      else
        lines.push_back(fmt::format("tl.store({} + o, {})", sig.names.at(v), e));
    }
  };
  auto store_row = [&](std::vector<std::string>& lines, Region& region) {
    for (int v : G.outputs) {
      if (G.cls.at(v) != Cls::kRow) continue;
      std::string e = region.get(v, Cls::kRow);
      lines.push_back(fmt::format("tl.store({} + i, {}, mask=mask)", sig.names.at(v), e));
    }
  };

  json ctx = {
      {"name", name},
      {"signature", sig.text},
      {"cast", needs_int64((G.outer * G.red + block_r) * G.inner + block_j) ? ".to(tl.int64)" : ""},
      {"red", red},
      {"inner", inner},
      {"jt", std::to_string(jt)},
      {"args", sig.args},
      {"grid", std::to_string(G.outer * jt)},
      {"BLOCK_R", std::to_string(block_r)},
      {"BLOCK_J", std::to_string(block_j)},
      {"num_warps", std::to_string(params.value("num_warps", 4))}};
  std::string code = render_skill(skills, "triton", "row", two_d ? "head2d" : "head1d", ctx);
  if (tile) {
    std::vector<std::string> lines;
    Loader loader{&lines};
    Region::Hooks h = hooks(lines, loader);
    Region* self = nullptr;
    h.reduce = [&](int v) {
      const Node& n = g.nodes[g.values[v].producer];
      std::string e = reduced_input(*self, loader, n);
      lines.push_back(
          fmt::format("p{} = {}", v, spell(kTritonReduce, n.reduce, masked(n.reduce, e), "0")));
    };
    Region region(g, G, skills, "triton", &perrow_known, h);
    self = &region;
    store_row(lines, region);
    store_perrow(lines, region);
    code += render_skill(skills, "triton", "row", two_d ? "tile2d" : "tile1d", ctx);
    code += block_at(lines, 4);
  } else {
    std::string acc_shape = two_d ? "[BLOCK_R, BLOCK_J]" : "[BLOCK_R]";
    auto perrow_nodes = [&](int level, std::vector<std::string>& lines) {
      Loader loader{&lines};
      Region region(g, G, skills, "triton", &perrow_known, hooks(lines, loader));
      for (int ni : G.nodes) {
        const Node& n = g.nodes[ni];
        if (n.kind == NodeKind::kReduce || G.cls.at(n.out) != Cls::kPerRow) continue;
        if (G.plevel.at(n.out) == level) region.get(n.out, Cls::kPerRow);
      }
    };
    std::vector<std::string> pro;
    perrow_nodes(-1, pro);
    code += block_at(pro, 4);
    std::string loop = render_skill(skills, "triton", "row", two_d ? "loop2d" : "loop1d", ctx);
    for (int k = 0; k < G.passes; ++k) {
      std::vector<std::string> init, body, fin, epi, post;
      Loader loader{&body};
      Region region(g, G, skills, "triton", &perrow_known, hooks(body, loader));
      for (int ni : G.nodes) {
        const Node& n = g.nodes[ni];
        if (n.kind != NodeKind::kReduce || G.level.at(n.out) != k) continue;
        if (G.online.contains(n.out)) continue;  // summed in its max's pass
        std::string ident = reduce_identity(n.reduce, "triton");
        init.push_back(fmt::format("a{} = tl.full({}, {}, tl.float32)", n.out, acc_shape, ident));
        std::string e = masked(n.reduce, reduced_input(region, loader, n));
        const std::vector<int> sums = online_sums(G, n.out);
        if (sums.empty()) {
          body.push_back(fmt::format("a{0} = {1}", n.out,
                                     spell(kCombine, n.reduce, fmt::format("a{}", n.out), e)));
        } else {  // the running max, and each online sum rescaled to it
          const int m = n.out;
          body.push_back(fmt::format("y{} = {}", m, e));
          body.push_back(fmt::format("n{0} = tl.maximum(a{0}, y{0})", m));
          for (int s : sums) {
            init.push_back(fmt::format("a{} = tl.zeros({}, tl.float32)", s, acc_shape));
            body.push_back(
                fmt::format("a{1} = tl.where(a{0} == n{0}, a{1}, a{1} * tl.exp(a{0} - n{0})) + "
                            "tl.where(mask, tl.where(y{0} == n{0}, 1.0, tl.exp(y{0} - n{0})), 0.0)",
                            m, s));
          }
          body.push_back(fmt::format("a{0} = n{0}", m));
        }
        fin.push_back(fmt::format("p{} = {}", n.out,
                                  spell(kTritonReduce, n.reduce, fmt::format("a{}", n.out), "0")));
        for (int s : sums) {
          const int m = n.out, t = G.online.at(s).shift;
          fin.push_back(fmt::format(
              "p{1} = tl.sum(tl.where(a{0} == p{0}, a{1}, a{1} * tl.exp(a{0} - p{0})), 0)", m, s));
          // The sum was taken against M: times exp(M - T) where the shift T is not M (logsumexp's
          // where M is infinite); where T is M and infinite, exp(x - T) is NaN somewhere, so is
          // the two-pass sum.
          const std::string nan =
              fmt::format("tl.where(tl.abs(p{0}) == float(\"inf\"), float(\"nan\"), p{1})", m, s);
          if (t != m)
            post.push_back(fmt::format(
                "p{1} = tl.where(p{0} == p{2}, {3}, p{1} * tl.exp(p{0} - p{2}))", m, s, t, nan));
          else
            fin.push_back(fmt::format("p{} = {}", s, nan));
          perrow_known[s] = true;
        }
      }
      for (int ni : G.nodes)
        if (g.nodes[ni].kind == NodeKind::kReduce && G.level.at(g.nodes[ni].out) == k)
          perrow_known[g.nodes[ni].out] = true;
      perrow_nodes(k, epi);
      code += block_at(init, 4) + (body.empty() ? "" : loop + block_at(body, 8)) +
              block_at(fin, 4) + block_at(epi, 4) + block_at(post, 4);
    }
    std::vector<std::string> fbody, stores;
    Loader floader{&fbody};
    Region fregion(g, G, skills, "triton", &perrow_known, hooks(fbody, floader));
    store_row(fbody, fregion);
    if (!fbody.empty()) code += loop + block_at(fbody, 8);
    Loader sloader{&stores};
    Region sregion(g, G, skills, "triton", &perrow_known, hooks(stores, sloader));
    store_perrow(stores, sregion);
    code += block_at(stores, 4);
  }
  return {code + "\n", {launch_statement(skills, "row", ctx)}};
}

}  // namespace

KernelCode emit_triton(const Graph& g, const KernelGroup& G, int index, const Skills& skills,
                       const json& params) {
  std::string name = fmt::format("_ok_kernel_{}", index);
  Sig sig = signature(g, G);
  const json own = group_params(G, params);
  return G.row ? row(g, G, name, sig, skills, own) : pointwise(g, G, name, sig, skills, own);
}

}  // namespace ok::generate
