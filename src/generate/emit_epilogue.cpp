// The epilogue of a GEMM or convolution kernel (level 2's tails): a pointwise group the planner
// fused into the product's step (plan.cpp, fuse_epilogues) is computed on each accumulated value
// before its store, with the same Region machinery as a pointwise kernel. The product's value is
// the accumulator; the group's other leaves are extra kernel inputs read at the element's flat
// index (broadcast as in a pointwise kernel); its first output is stored through the template's
// own output pointer, any others through extra output pointers.
#include <fmt/format.h>

#include "generate/emit.hpp"

namespace ok::generate {

Epilogue make_epilogue(const Graph& g, const KernelGroup* G, int product, const Skills& skills,
                       const std::string& lang, const EpilogueSite& site) {
  Epilogue e;
  e.stored = product;
  if (!G) return e;
  const bool python = lang == "triton";
  const std::string ptr = python ? "" : "const float* __restrict__ ";
  const std::string out_ptr = python ? "" : "float* __restrict__ ";
  std::map<int, std::string> names;
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
