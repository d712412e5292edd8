// The epilogue of a GEMM or convolution kernel (level 2's tails): a pointwise group the planner
// fused into the product's step (plan.cpp, fuse_epilogues) is computed on each accumulated value
// before its store, with the same Region machinery as a pointwise kernel. The product's value is
// the accumulator; the group's other leaves are extra kernel inputs read at the element's flat
// index (broadcast as in a pointwise kernel); its first output is stored through the template's
// own output pointer, any others through extra output pointers. A row group fused into a GEMM (a
// row epilogue) runs on Triton over the program's whole-row tile (triton_row_epilogue, here), on
// the CPU and CUDA as the row kernel's passes over the rows of a task or block (emit_cpu.cpp,
// emit_cuda.cpp).
#include <fmt/format.h>

#include <regex>

#include "generate/emit.hpp"

namespace ok::generate {

Epilogue epilogue_params(const KernelGroup* G, int product, const std::string& lang,
                         std::map<int, std::string>& names) {
  Epilogue e;
  e.stored = product;
  if (!G) return e;
  const bool python = lang == "triton";
  const std::string ptr = python ? "" : "const float* __restrict__ ";
  const std::string out_ptr = python ? "" : "float* __restrict__ ";
  for (int v : G->leaves) {
    if (v == product) continue;
    names[v] = fmt::format("ep_in{}", e.inputs.size());
    e.inputs.push_back(v);
    e.params.push_back(ptr + names[v]);
    e.names.push_back(names[v]);
  }
  e.stored = G->outputs.front();
  for (size_t k = 1; k < G->outputs.size(); ++k) {
    names[G->outputs[k]] = fmt::format("ep_out{}", k);
    e.outputs.push_back(G->outputs[k]);
    e.params.push_back(out_ptr + names[G->outputs[k]]);
    e.names.push_back(names[G->outputs[k]]);
  }
  return e;
}

Epilogue make_epilogue(const Graph& g, const KernelGroup* G, int product, const Skills& skills,
                       const std::string& lang, const EpilogueSite& site) {
  std::map<int, std::string> names;
  Epilogue e = epilogue_params(G, product, lang, names);
  if (!G) return e;
  const bool python = lang == "triton";
  IndexSpace sp;
  sp.lin_row = "ep_i";
  e.lines.push_back(python ? "ep_i = " + site.index
                           : fmt::format("const int64_t ep_i = {};", site.index));
  Region::Hooks h;
  h.load = [&](int v, const Shape& ctx, Cls c) -> std::string {
    if (v == product) return site.acc;
    const std::string idx = index_of(g, *G, v, ctx, c, sp, python);
    if (python)
      return fmt::format("tl.load({} + ({}), mask={}, other=0.0)", names.at(v), idx, site.mask);
    return fmt::format("{}[{}]", names.at(v), idx);
  };
  h.decl = [&](int v, const std::string& expr, Cls) {
    e.lines.push_back(python ? fmt::format("v{} = {}", v, expr)
                             : fmt::format("const float v{} = {};", v, expr));
  };
  std::string result;
  pointwise_outputs(
      g, *G, skills, python ? "triton" : lang, h, [&](int v, const std::string& expr) {
        if (v == e.stored) {
          result = expr;
        } else if (python) {
          e.lines.push_back(
              fmt::format("tl.store({} + ep_i, {}, mask={})", names.at(v), expr, site.mask));
        } else {
          e.lines.push_back(fmt::format("{}[ep_i] = {};", names.at(v), expr));
        }
      });
  e.lines.push_back(python ? fmt::format("{} = {}", site.acc, result)
                           : fmt::format("{} = {};", site.acc, result));
  return e;
}

std::vector<std::string> triton_row_epilogue(const Graph& g, const KernelGroup& G, int product,
                                             const Skills& skills, const Gemm& gm, int64_t block_n,
                                             Epilogue& e) {
  std::map<int, std::string> names;
  e = epilogue_params(&G, product, "triton", names);
  names[G.outputs.front()] = "c_ptr";
  const int64_t seg = gm.n / G.red, br = block_n / seg;
  if (seg > 1 && block_n != gm.n) throw EmitError{"a row epilogue's segments need BLOCK_N == N"};
  const std::string cast =
      gm.batch * gm.m * gm.n >= (int64_t{1} << 31) - (int64_t{1} << 24) ? ".to(tl.int64)" : "";
  std::vector<std::string> lines = {
      seg == 1 ? "ep_x = acc[:, None, :]"
               : fmt::format("ep_x = tl.reshape(acc, (BLOCK_M, {}, {}))", seg, br),
      fmt::format("ep_row = bid * {} + offs_cm{}", gm.m, cast),
      seg == 1 ? "ep_s = 0" : fmt::format("ep_s = tl.arange(0, {})[None, :, None]", seg),
      fmt::format("ep_r = tl.arange(0, {})[None, None, :]", br),
      fmt::format("ep_omask = offs_cm[:, None, None] < {}", gm.m),
      fmt::format("ep_rmask = ep_r < {}", G.red),
      "ep_mask = ep_omask & ep_rmask",
      fmt::format("ep_pmask = offs_cm[:, None] < {}", gm.m),
      fmt::format("ep_o3 = ep_row[:, None, None] * {} + ep_s", seg),
      seg == 1 ? "ep_o = ep_row[:, None]"
               : fmt::format("ep_o = ep_row[:, None] * {} + tl.arange(0, {})[None, :]", seg, seg),
      fmt::format("ep_i = ep_o3 * {} + ep_r", G.red)};
  IndexSpace sp;
  sp.lin_row = "ep_i";
  sp.lin_perrow = "ep_o";
  const int rank = static_cast<int>(G.base.size());
  sp.row_coords = {Coord{"ep_o3", 0, G.red_begin}, Coord{"ep_r", G.red_begin, G.red_end},
                   Coord{"0", G.red_end, rank}};
  sp.perrow_coords = {Coord{"ep_o", 0, G.red_begin}, Coord{"0", G.red_end, rank}};
  std::map<int, bool> perrow_known;
  Region::Hooks h;
  // Triton broadcasts a load's mask to its pointers, never the reverse: the mask is that of the
  // coordinates the index uses (a bias read by column: [1, 1, R]).
  auto mask_of = [](const std::string& idx, Cls c) -> std::string {
    auto uses = [&idx](const char* name) {
      return std::regex_search(idx, std::regex(std::string("\\b") + name + "\\b"));
    };
    if (c == Cls::kPerRow) return uses("ep_o") ? ", mask=ep_pmask, other=0.0" : "";
    const bool rows = uses("ep_o3"), cols = uses("ep_r");
    if (uses("ep_i") || (rows && cols)) return ", mask=ep_mask, other=0.0";
    if (cols) return ", mask=ep_rmask, other=0.0";
    return rows ? ", mask=ep_omask, other=0.0" : "";
  };
  h.load = [&](int v, const Shape& ctx, Cls c) -> std::string {
    if (v == product) return "ep_x";
    const std::string idx = index_of(g, G, v, ctx, c, sp, true);
    return fmt::format("tl.load({} + ({}){})", names.at(v), idx, mask_of(idx, c));
  };
  h.decl = [&](int v, const std::string& expr, Cls c) {
    lines.push_back(fmt::format("{} = {}", Region::var(v, c), expr));
  };
  h.perrow_ref = [](int v, Cls use) {
    return use == Cls::kRow ? fmt::format("p{}[:, :, None]", v) : fmt::format("p{}", v);
  };
  h.coord = [&](const Shape& ctx, int dim, Cls c) { return coord_of(G, ctx, dim, c, sp, true); };
  Region* self = nullptr;
  h.reduce = [&](int v) {
    const Node& n = g.nodes[g.values[v].producer];
    const int x = n.args[0].value;
    const std::string in = G.produces(x)  ? self->get(x, Cls::kRow)
                           : x == product ? "ep_x"
                                          : h.load(x, g.values[x].shape, Cls::kRow);
    const std::string masked =
        fmt::format("tl.where(ep_mask, {}, {})", in, reduce_identity(n.reduce, "triton"));
    lines.push_back(fmt::format("p{} = {}", v, spell(kTritonReduce, n.reduce, masked, "2")));
  };
  Region region(g, G, skills, "triton", &perrow_known, h);
  self = &region;
  for (int v : G.outputs) {
    const bool row = G.cls.at(v) == Cls::kRow;
    const std::string val = region.get(v, G.cls.at(v));
    lines.push_back(fmt::format("tl.store({} + {}, {}, mask={})", names.at(v),
                                row ? "ep_i" : "ep_o", val, row ? "ep_mask" : "ep_pmask"));
  }
  return lines;
}

std::string Epilogue::signature() const {
  std::string out;
  for (const auto& p : params) out += ", " + p;
  return out;
}

std::string Epilogue::arguments(const Graph& g, bool pointers) const {
  std::string out;
  for (int v : inputs)
    out += ", " + (pointers ? fmt::format("_ok_ptr({})", py_name(g, v)) : py_name(g, v));
  for (int v : outputs)
    out += ", " + (pointers ? fmt::format("_ok_ptr({})", py_name(g, v)) : py_name(g, v));
  return out;
}

std::vector<std::string> Epilogue::allocations(const Graph& g, const std::string& device,
                                               bool with_stored) const {
  std::vector<std::string> out;
  if (with_stored)
    out.push_back(fmt::format("{} = _ok_torch.empty({}, device={}, dtype=_ok_torch.float32)",
                              py_name(g, stored), shape_str(g.values[stored].shape), device));
  for (int v : outputs)
    out.push_back(fmt::format("{} = _ok_torch.empty({}, device={}, dtype=_ok_torch.float32)",
                              py_name(g, v), shape_str(g.values[v].shape), device));
  return out;
}

}  // namespace ok::generate
