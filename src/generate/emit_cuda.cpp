// CUDA backend: kernels plus extern "C" host launchers, built by
// openkernel_worker.native.compile_cuda.
#include <fmt/format.h>

#include <set>

#include "generate/emit.hpp"
#include "util/strings.hpp"

namespace ok::generate {

namespace {

using nlohmann::json;

const int64_t kInt32Limit = (int64_t{1} << 31) - (int64_t{1} << 24);

struct Sig {
  std::map<int, std::string> names;
  std::string device;  // kernel parameters
  std::string host;    // launcher parameters
  std::string args;    // "in0, in1, out0"
  std::vector<std::string> py_args;
};

Sig signature(const Graph& g, const KernelGroup& G) {
  Sig s;
  std::vector<std::string> dev, host, args;
  for_each_param(G, [&](int v, const std::string& name, bool output) {
    const char* constness = output ? "" : "const ";
    s.names[v] = name;
    const std::string type = c_type(g.values[v].dtype);
    dev.push_back(fmt::format("{}{}* __restrict__ {}", constness, type, name));
    host.push_back(fmt::format("{}{}* {}", constness, type, name));
    args.push_back(name);
    s.py_args.push_back(fmt::format("_ok_ptr({})", py_name(g, v)));
  });
  s.device = util::join(dev, ", ");
  s.host = util::join(host, ", ");
  s.args = util::join(args, ", ");
  return s;
}

std::string aligned_check(const Sig& sig, const std::set<int>& values) {
  std::string out;
  for (int v : values)
    out += fmt::format("{}(((uintptr_t){}) & 15) == 0", out.empty() ? "" : " && ", sig.names.at(v));
  return out.empty() ? "true" : out;
}

// The block reduction's operator struct (cub-style), and the combine of two partial values.
constexpr ReduceSpelling kOpStruct{"OkSum", "OkProd", "OkMax", "OkMin",
                                   "arg reductions are not generated for CUDA"};
constexpr ReduceSpelling kCombine{"{0} + {1}", "{0} * {1}", "fmaxf({0}, {1})", "fminf({0}, {1})",
                                  "arg reductions are not generated for CUDA"};

// One loop iteration body over VEC consecutive elements: vector loads of the full leaves it reads,
// a lane loop with the scalar code, vector stores.
struct VecBody {
  int vec = 1;
  std::vector<std::string> lanes;  // statements inside the lane loop (or the body for vec == 1)
  std::set<int> vector_leaves;     // full leaves read as float4
  std::vector<std::pair<int, std::string>> vector_stores;  // output value -> lane expression
  std::vector<std::string> pre;  // lane statements before i (the row coordinate)
  std::string assemble(const Sig& sig, const std::string& vec_index, const std::string& lane_index,
                       const std::string& idx_t) const {
    std::vector<std::string> out;
    if (vec == 1) {
      for (const auto& l : pre) out.push_back(l);
      out.push_back(fmt::format("const {} i = {};", idx_t, lane_index));
      for (const auto& l : lanes) out.push_back(l);
      return lines_at(out, 6);
    }
    for (int v : vector_leaves) {
      const std::string& n = sig.names.at(v);
      out.push_back(fmt::format("const float4 t_{0} = reinterpret_cast<const float4*>({0})[{1}];",
                                n, vec_index));
      out.push_back(
          fmt::format("const float l_{0}[4] = {{t_{0}.x, t_{0}.y, t_{0}.z, t_{0}.w}};", n));
    }
    for (const auto& [v, e] : vector_stores)
      out.push_back(fmt::format("float s_{}[4];", sig.names.at(v)));
    out.push_back("#pragma unroll");
    out.push_back("for (int l = 0; l < 4; ++l) {");
    for (const auto& l : pre) out.push_back("  " + l);
    out.push_back(fmt::format("  const {} i = {};", idx_t, lane_index));
    for (const auto& l : lanes) out.push_back("  " + l);
    for (const auto& [v, e] : vector_stores)
      out.push_back(fmt::format("  s_{}[l] = {};", sig.names.at(v), e));
    out.push_back("}");
    for (const auto& [v, e] : vector_stores)
      out.push_back(
          fmt::format("reinterpret_cast<float4*>({0})[{1}] = make_float4(s_{0}[0], s_{0}[1], "
                      "s_{0}[2], s_{0}[3]);",
                      sig.names.at(v), vec_index));
    return lines_at(out, 6);
  }
};

KernelCode pointwise(const Graph& g, const KernelGroup& G, int index, const Sig& sig,
                     const Skills& skills, const json& params) {
  const int vec_param = params.value("vec", 1);
  const int threads = params.value("threads", 256);
  const int items = params.value("items", 1);
  const std::string idx_t = G.full >= kInt32Limit ? "long long" : "int";
  const std::string name = fmt::format("ok_pointwise_{}", index);
  IndexSpace sp;
  sp.lin_row = "i";
  std::string code;
  std::set<int> aligned_values;
  for (int vec : {4, 1}) {
    if (vec == 4 && vec_param != 4) continue;
    VecBody vb;
    vb.vec = vec;
    Region::Hooks h;
    h.load = [&](int v, const Shape& ctx, Cls c) {
      std::string idx = index_of(g, G, v, ctx, c, sp, false);
      if (vec == 4 && idx == "i" && g.values[v].dtype == "float32") {  // float4: float data only
        vb.vector_leaves.insert(v);
        return fmt::format("l_{}[l]", sig.names.at(v));
      }
      return fmt::format("{}[{}]", sig.names.at(v), idx);
    };
    h.decl = [&](int v, const std::string& e, Cls) {
      vb.lanes.push_back(fmt::format("const float v{} = {};", v, e));
    };
    h.coord = [&](const Shape& ctx, int dim, Cls c) { return coord_of(G, ctx, dim, c, sp, false); };
    pointwise_outputs(g, G, skills, "cuda", h, [&](int v, const std::string& e) {
      if (vec == 4)
        vb.vector_stores.emplace_back(v, e);
      else
        vb.lanes.push_back(fmt::format("{}[i] = {};", sig.names.at(v), e));
    });
    if (vec == 4) {
      aligned_values = vb.vector_leaves;
      for (int v : G.outputs) aligned_values.insert(v);
    }
    int64_t nq = G.full / vec;
    json ctx = {{"name", fmt::format("{}_v{}", name, vec)},
                {"signature", sig.device},
                {"threads", std::to_string(threads)},
                {"items", std::to_string(items)},
                {"idx", idx_t},
                {"nq", std::to_string(nq)},
                {"body", vb.assemble(sig, "q", vec == 4 ? "q * 4 + l" : "q", idx_t)}};
    code += render_skill(skills, "cuda", "pointwise", "kernel", ctx) + "\n";
  }
  auto grid = [&](int vec) {
    int64_t per = static_cast<int64_t>(threads) * items;
    return std::to_string((G.full / vec + per - 1) / per);
  };
  json vec4 = json::array();
  if (vec_param == 4)
    vec4.push_back({{"aligned", aligned_check(sig, aligned_values)}, {"grid4", grid(4)}});
  json lctx = {{"launcher", fmt::format("ok_launch_{}", index)},
               {"host_signature", sig.host},
               {"name", name},
               {"vec4", vec4},
               {"threads", std::to_string(threads)},
               {"grid1", grid(1)},
               {"args", sig.args}};
  code += render_skill(skills, "cuda", "pointwise", "launcher", lctx);
  return {code, {}};
}

// A row group's kernel, or (product >= 0: a row epilogue, inner 1, params TJ 1 and TR the GEMM
// block's threads) its passes over the rows of a GEMM block, the product read from the scratch
// buffer the block wrote (ep_scratch, at the element's flat index).
KernelCode row(const Graph& g, const KernelGroup& G, int index, const Sig& sig,
               const Skills& skills, const json& params, int product = -1) {
  const bool two_d = G.inner > 1;
  const int tj = params.value("TJ", 1);
  const int tr = params.value("TR", 256);
  const int vec_param = two_d ? 1 : params.value("vec", 1);
  const int threads = tj * tr;
  const int64_t jt = (G.inner + tj - 1) / tj;
  const std::string idx_t = G.full >= kInt32Limit ? "long long" : "int";
  const std::string name = fmt::format("ok_row_{}", index);
  const std::string red = std::to_string(G.red), inner = std::to_string(G.inner);
  IndexSpace sp =
      row_space(G, "o", "r", "j", "i", two_d ? fmt::format("(o * {} + jc)", inner) : "o");
  std::string code;
  std::set<int> aligned_values;
  for (int vec : {4, 1}) {
    if (vec == 4 && vec_param != 4) continue;
    std::map<int, bool> perrow_known;
    auto hooks = [&](std::vector<std::string>& lines, VecBody* vb) {
      Region::Hooks h;
      h.load = [&, vb](int v, const Shape& ctx, Cls c) {
        std::string idx = index_of(g, G, v, ctx, c, sp, false);
        if (vb && vb->vec == 4 && c == Cls::kRow && idx == "i" &&
            g.values[v].dtype == "float32") {  // float4: float data only
          vb->vector_leaves.insert(v);
          return fmt::format("l_{}[l]", sig.names.at(v));
        }
        return fmt::format("{}[{}]", v == product ? "ep_scratch" : sig.names.at(v), idx);
      };
      h.decl = [&lines](int v, const std::string& e, Cls c) {
        lines.push_back(fmt::format("const float {} = {};", Region::var(v, c), e));
      };
      h.perrow_ref = [](int v, Cls) { return fmt::format("p{}", v); };
      h.coord = [&](const Shape& ctx, int dim, Cls c) {
        return coord_of(G, ctx, dim, c, sp, false);
      };
      return h;
    };
    auto perrow_nodes = [&](int level, std::vector<std::string>& lines) {
      Region region(g, G, skills, "cuda", &perrow_known, hooks(lines, nullptr));
      for (int ni : G.nodes) {
        const Node& n = g.nodes[ni];
        if (n.kind == NodeKind::kReduce || G.cls.at(n.out) != Cls::kPerRow) continue;
        if (G.plevel.at(n.out) == level) region.get(n.out, Cls::kPerRow);
      }
    };
    // r and i for one lane; the row coordinate r is needed by broadcast leaves.
    std::string lane = vec == 4 ? "rq * 4 + l" : "rq";
    std::string lin =
        two_d ? fmt::format("(o * {} + r) * {} + j", red, inner) : fmt::format("o * {} + r", red);
    auto body_text = [&](VecBody& vb) {
      vb.pre.push_back(fmt::format("const {} r = {};", idx_t, lane));
      return vb.assemble(sig, fmt::format("o * {} + rq", G.red / 4), lin, idx_t);
    };
    std::vector<std::string> pro;
    perrow_nodes(-1, pro);
    json passes = json::array();
    for (int k = 0; k < G.passes; ++k) {
      std::vector<std::string> init, fin, epi;
      VecBody vb;
      vb.vec = vec;
      Region region(g, G, skills, "cuda", &perrow_known, hooks(vb.lanes, &vb));
      std::vector<std::string> post;
      for (int ni : G.nodes) {
        const Node& n = g.nodes[ni];
        if (n.kind != NodeKind::kReduce || G.level.at(n.out) != k) continue;
        if (G.online.contains(n.out)) continue;  // summed in its max's pass
        init.push_back(fmt::format("float a{} = {};", n.out, reduce_identity(n.reduce, "cpp")));
        int x = n.args[0].value;
        std::string e = G.produces(x) ? region.get(x, Cls::kRow)
                                      : hooks(vb.lanes, &vb).load(x, g.values[x].shape, Cls::kRow);
        const std::vector<int> sums = online_sums(G, n.out);
        if (sums.empty()) {
          vb.lanes.push_back(fmt::format("a{0} = {1};", n.out,
                                         spell(kCombine, n.reduce, fmt::format("a{}", n.out), e)));
        } else {  // the running max, and each online sum rescaled to it
          const int m = n.out;
          vb.lanes.push_back(
              fmt::format("const float y{0} = {1}, n{0} = fmaxf(a{0}, y{0});", m, e));
          for (int sum : sums) {
            init.push_back(fmt::format("float a{} = 0.0f;", sum));
            vb.lanes.push_back(
                fmt::format("a{1} = (a{0} == n{0} ? a{1} : a{1} * expf(a{0} - n{0})) + "
                            "(y{0} == n{0} ? 1.0f : expf(y{0} - n{0}));",
                            m, sum));
          }
          vb.lanes.push_back(fmt::format("a{0} = n{0};", m));
        }
        fin.push_back(fmt::format("const float p{} = ok_block_reduce<TJ, TR>(a{}, ok_sm, {}());",
                                  n.out, n.out, spell(kOpStruct, n.reduce)));
        for (int sum : sums) {
          const int m = n.out, t = G.online.at(sum).shift;
          fin.push_back(
              fmt::format("float p{1} = ok_block_reduce<TJ, TR>(a{0} == p{0} ? a{1} : "
                          "a{1} * expf(a{0} - p{0}), ok_sm, OkSum());",
                          m, sum));
          // The sum was taken against M: times exp(M - T) where the shift T is not M (logsumexp's
          // where M is infinite); where T is M and infinite, exp(x - T) is NaN somewhere, so is
          // the two-pass sum.
          if (t != m)
            post.push_back(fmt::format(
                "if (p{0} != p{2}) p{1} *= expf(p{0} - p{2}); else if (isinf(p{0})) p{1} = NAN;", m,
                sum, t));
          else
            fin.push_back(fmt::format("if (isinf(p{0})) p{1} = NAN;", m, sum));
          perrow_known[sum] = true;
        }
      }
      for (int ni : G.nodes)
        if (g.nodes[ni].kind == NodeKind::kReduce && G.level.at(g.nodes[ni].out) == k)
          perrow_known[g.nodes[ni].out] = true;
      perrow_nodes(k, epi);
      epi.insert(epi.end(), post.begin(), post.end());
      for (int v : vb.vector_leaves) aligned_values.insert(v);
      passes.push_back({{"init", lines_at(init, 2)},
                        {"loop", !vb.lanes.empty()},  // none left when online sums took them
                        {"body", body_text(vb)},
                        {"finish", lines_at(fin, 2)},
                        {"epilogue", lines_at(epi, 2)}});
    }
    json final_pass = json::array();
    {
      VecBody vb;
      vb.vec = vec;
      Region region(g, G, skills, "cuda", &perrow_known, hooks(vb.lanes, &vb));
      bool any = false;
      for (int v : G.outputs) {
        if (G.cls.at(v) != Cls::kRow) continue;
        any = true;
        std::string e = region.get(v, Cls::kRow);
        if (vec == 4) {
          vb.vector_stores.emplace_back(v, e);
          aligned_values.insert(v);
        } else {
          vb.lanes.push_back(fmt::format("{}[i] = {};", sig.names.at(v), e));
        }
      }
      for (int v : vb.vector_leaves) aligned_values.insert(v);
      if (any) final_pass.push_back({{"body", body_text(vb)}});
    }
    std::vector<std::string> stores;
    {
      std::vector<std::string> none;
      Region region(g, G, skills, "cuda", &perrow_known, hooks(none, nullptr));
      for (int v : G.outputs) {
        if (G.cls.at(v) != Cls::kPerRow) continue;
        std::string e = region.get(v, Cls::kPerRow);
        stores.push_back(fmt::format("{}[{}] = {};", sig.names.at(v),
                                     two_d ? fmt::format("o * {} + j", inner) : "o", e));
      }
      if (!none.empty()) throw EmitError{"a per-row output was not computed before the stores"};
    }
    json ctx = {{"name", fmt::format("{}_v{}", name, vec)},
                {"kernel", product < 0},
                {"signature", sig.device},
                {"threads", std::to_string(threads)},
                {"TJ", std::to_string(tj)},
                {"TR", std::to_string(tr)},
                {"idx", idx_t},
                {"jt", std::to_string(jt)},
                {"inner", inner},
                {"nq", std::to_string(G.red / vec)},
                {"prologue", lines_at(pro, 2)},
                {"passes", passes},
                {"final", final_pass},
                {"stores", lines_at(stores, 4)}};
    code += render_skill(skills, "cuda", "row", "kernel", ctx) + "\n";
  }
  if (product >= 0) return {code, {}};
  json vec4 = json::array();
  if (vec_param == 4) vec4.push_back({{"aligned", aligned_check(sig, aligned_values)}});
  json lctx = {{"launcher", fmt::format("ok_launch_{}", index)},
               {"host_signature", sig.host},
               {"name", name},
               {"vec4", vec4},
               {"threads", std::to_string(threads)},
               {"grid", std::to_string(G.outer * jt)},
               {"args", sig.args}};
  code += render_skill(skills, "cuda", "row", "launcher", lctx);
  return {code, {}};
}

}  // namespace

KernelCode emit_cuda(const Graph& g, const KernelGroup& G, int index, const Skills& skills,
                     const json& params) {
  Sig sig = signature(g, G);
  const json own = group_params(G, params);
  KernelCode code =
      G.row ? row(g, G, index, sig, skills, own) : pointwise(g, G, index, sig, skills, own);
  std::string args;
  for (const auto& a : sig.py_args) args += a + ", ";
  code.launch.push_back(
      fmt::format("_ok_check(_ok_lib.ok_launch_{}({}_ok_stream()))", index, args));
  return code;
}

std::string cuda_row_epilogue(const Graph& g, const KernelGroup& G, int product,
                              const Skills& skills, const std::map<int, std::string>& names,
                              int threads) {
  if (G.inner != 1) throw EmitError{"a row epilogue needs rows along the product's last dim"};
  Sig sig;
  sig.names = names;
  return row(g, G, 0, sig, skills, {{"TJ", 1}, {"TR", threads}, {"vec", 1}}, product).device;
}

}  // namespace ok::generate
