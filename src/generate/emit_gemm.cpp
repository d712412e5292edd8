// GEMM kernels for the three backends, from the gemm skills
// (data/skills/{cpu,triton,cuda}_gemm.json): one kernel per Gemm node, its shapes, strides and kept
// triangle baked in as constants; the forward lines allocate the output and launch it. A fused
// pointwise tail runs in each template's epilogue slot on the accumulated value
// (emit_epilogue.cpp).
#include <fmt/format.h>

#include "generate/emit.hpp"

namespace ok::generate {

namespace {

using nlohmann::json;

// The shape and stride slots every gemm template shares.
json shape_context(const Gemm& gm, const std::string& name) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return {{"name", name},
          {"M", s(gm.m)},
          {"N", s(gm.n)},
          {"K", s(gm.k)},
          {"batch", s(gm.batch)},
          {"sam", s(gm.stride_am())},
          {"sak", s(gm.stride_ak())},
          {"sbk", s(gm.stride_bk())},
          {"sbn", s(gm.stride_bn())},
          {"sab", s(gm.batch_stride_a())},
          {"sbb", s(gm.batch_stride_b())},
          {"scb", s(gm.m * gm.n)}};
}

// A tile [i0, i_last] x [j0, j_last] lies outside the kept triangle: every j - i is past the
// diagonal.
std::string outside(const Gemm& gm, const std::string& i0, const std::string& i_last,
                    const std::string& j0, const std::string& j_last) {
  if (gm.triangle == Triangle::kLower)
    return fmt::format("{} - ({}) > {}", j0, i_last, gm.diagonal);
  return fmt::format("{} - ({}) < {}", j_last, i0, gm.diagonal);
}

// The kept-triangle test of one element (C++ spelling: `cond ? value : 0`).
std::string keep(const Gemm& gm, const std::string& i, const std::string& j) {
  return fmt::format("{} - ({}) {} {}", j, i,
                     gm.triangle == Triangle::kLower ? "<=" : ">=", gm.diagonal);
}

void add_triangle(json& ctx, const Gemm& gm, const std::string& outside_expr,
                  const std::string& keep_expr, bool python) {
  ctx["triangle"] = json::array();
  ctx["keep"] = "";
  ctx["keep_end"] = "";
  if (gm.triangle == Triangle::kNone) return;
  ctx["triangle"].push_back({{"outside", outside_expr}, {"keep", keep_expr}});
  if (!python) {
    ctx["keep"] = "(" + keep_expr + ") ? ";
    ctx["keep_end"] = " : 0.0f";
  }
}

// forward's allocations: the value the kernel stores and the epilogue's other outputs.
std::vector<std::string> allocs(const Graph& g, const Node& n, const Epilogue& e) {
  return e.allocations(g, py_name(g, n.args[0].value) + ".device", true);
}

std::string pointers(const Graph& g, const Node& n, const Epilogue& e) {
  return fmt::format("_ok_ptr({}), _ok_ptr({}), _ok_ptr({}){}", py_name(g, n.args[0].value),
                     py_name(g, n.args[1].value), py_name(g, e.stored), e.arguments(g, true));
}

// The C++ and CUDA templates' epilogue slots, on `v` at flat index `index`.
Epilogue cpp_epilogue(const Graph& g, const Node& n, const KernelGroup* G, const Skills& skills,
                      const std::string& lang, const std::string& index, json& ctx) {
  Epilogue e = make_epilogue(g, G, n.out, skills, lang, {"v", index, ""});
  ctx["extra"] = e.signature();
  std::string call;
  for (const auto& name : e.names) call += ", " + name;
  ctx["extra_names"] = call;
  ctx["epilogue"] = lines_at(e.lines, 8);
  return e;
}

KernelCode cpu(const Graph& g, const Node& n, int index, const Skills& skills, const json& p,
               const KernelGroup* G) {
  const Gemm& gm = n.gemm;
  const std::string name = fmt::format("ok_gemm_{}", index);
  json ctx = shape_context(gm, name);
  for (const char* k : {"BM", "BN", "BK", "unroll"}) ctx[k] = std::to_string(p.at(k).get<int>());
  ctx["schedule"] = p.value("schedule", "static");
  ctx["work"] = std::to_string(gm.batch * gm.m * gm.n * gm.k);
  const std::string order = p.value("order", "ik");
  ctx["ik"] = order == "ik";
  ctx["ki"] = order == "ki";
  add_triangle(ctx, gm, outside(gm, "i0", "i0 + im - 1", "j0", "j0 + jn - 1"),
               keep(gm, "i0 + i", "j0 + j"), false);
  Epilogue e = cpp_epilogue(g, n, G, skills, "cpp", "bi * M * N + (i0 + i) * N + j0 + j", ctx);
  std::vector<std::string> launch = allocs(g, n, e);
  launch.push_back(fmt::format("_ok_lib.{}({})", name, pointers(g, n, e)));
  return {render_skill(skills, "cpu", "gemm", "kernel", ctx) + "\n", launch};
}

KernelCode triton(const Graph& g, const Node& n, int index, const Skills& skills, const json& p,
                  const KernelGroup* G) {
  const Gemm& gm = n.gemm;
  const std::string name = fmt::format("_ok_gemm_{}", index);
  json ctx = shape_context(gm, name);
  for (const char* k :
       {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "num_warps", "num_stages"})
    ctx[k] = std::to_string(p.at(k).get<int>());
  const int64_t bm = p.at("BLOCK_M").get<int64_t>(), bn = p.at("BLOCK_N").get<int64_t>();
  const bool split = p.at("SPLIT_K").get<int>() > 1;
  // Offsets within a batch or across one: int64 once they may pass int32 (masked lanes included).
  const int64_t largest = std::max({gm.batch * gm.m * gm.k, gm.batch * gm.k * gm.n,
                                    gm.batch * gm.m * gm.n, (gm.m + bm) * (gm.k + bn) * 2});
  ctx["cast"] = largest >= (int64_t{1} << 31) - (int64_t{1} << 24) ? ".to(tl.int64)" : "";
  add_triangle(ctx, gm,
               outside(gm, "pid_m * BLOCK_M", "pid_m * BLOCK_M + BLOCK_M - 1", "pid_n * BLOCK_N",
                       "pid_n * BLOCK_N + BLOCK_N - 1"),
               keep(gm, "offs_cm[:, None]", "offs_cn[None, :]"), true);
  ctx["tiles"] = std::to_string(((gm.m + bm - 1) / bm) * ((gm.n + bn - 1) / bn));
  if (split && G) throw EmitError{"split-K cannot run an epilogue (its partial sums are added)"};
  Epilogue e = make_epilogue(
      g, G, n.out, skills, "triton",
      {"acc", fmt::format("bid * {} + offs_cm[:, None] * {} + offs_cn[None, :]", gm.m * gm.n, gm.n),
       "c_mask"});
  std::string extra, extra_args;
  for (const auto& prm : e.params) extra += prm + ", ";
  for (int v : e.inputs) extra_args += py_name(g, v) + ", ";
  for (int v : e.outputs) extra_args += py_name(g, v) + ", ";
  ctx["extra"] = extra;
  ctx["extra_args"] = extra_args;
  ctx["epilogue"] = lines_at(e.lines, 4);
  ctx["out"] = py_name(g, e.stored);
  ctx["a"] = py_name(g, n.args[0].value);
  ctx["b"] = py_name(g, n.args[1].value);
  ctx["alloc"] = split ? "zeros" : "empty";
  ctx["shape"] = shape_str(g.values[e.stored].shape);
  ctx["device"] = py_name(g, n.args[0].value) + ".device";
  std::string device = render_skill(skills, "triton", "gemm", "prelude", json::object()) +
                       "\n\n\n" + render_skill(skills, "triton", "gemm", "kernel", ctx) + "\n";
  std::vector<std::string> launch = e.allocations(g, ctx["device"].get<std::string>(), false);
  for (auto& l : split_lines(render_skill(skills, "triton", "gemm", "launch", ctx)))
    launch.push_back(std::move(l));
  return {device, launch};
}

KernelCode cuda(const Graph& g, const Node& n, int index, const Skills& skills, const json& p,
                const KernelGroup* G) {
  const Gemm& gm = n.gemm;
  const std::string name = fmt::format("ok_gemm_{}", index);
  json ctx = shape_context(gm, name);
  const int bm = p.at("BM").get<int>(), bn = p.at("BN").get<int>();
  const int tm = p.at("TM").get<int>(), tn = p.at("TN").get<int>();
  for (const char* k : {"BM", "BN", "BK", "TM", "TN"}) ctx[k] = std::to_string(p.at(k).get<int>());
  ctx["threads"] = std::to_string((bm / tm) * (bn / tn));
  ctx["a_k_contiguous"] = gm.trans_a ? "false" : "true";
  ctx["b_n_contiguous"] = gm.trans_b ? "false" : "true";
  add_triangle(ctx, gm, outside(gm, "i0", "i0 + im - 1", "j0", "j0 + jn - 1"), keep(gm, "i", "j"),
               false);
  ctx["launcher"] = fmt::format("ok_launch_gemm_{}", index);
  ctx["tiles_m"] = std::to_string((gm.m + bm - 1) / bm);
  ctx["tiles_n"] = std::to_string((gm.n + bn - 1) / bn);
  Epilogue e = cpp_epilogue(g, n, G, skills, "cuda", "bi * M * N + i * N + j", ctx);
  std::string code = render_skill(skills, "cuda", "gemm", "kernel", ctx) + "\n" +
                     render_skill(skills, "cuda", "gemm", "launcher", ctx) + "\n";
  std::vector<std::string> launch = allocs(g, n, e);
  launch.push_back(fmt::format("_ok_check(_ok_lib.ok_launch_gemm_{}({}, _ok_stream()))", index,
                               pointers(g, n, e)));
  return {code, launch};
}

}  // namespace

KernelCode emit_gemm(const Graph& g, const Node& n, int index, const std::string& backend,
                     const Skills& skills, const json& params, const KernelGroup* epilogue) {
  if (backend == "cpu") return cpu(g, n, index, skills, params, epilogue);
  if (backend == "triton") return triton(g, n, index, skills, params, epilogue);
  return cuda(g, n, index, skills, params, epilogue);
}

}  // namespace ok::generate
