// Convolution kernels for the three backends, from the conv skills
// (data/skills/{cpu,triton,cuda}_conv.json): one kernel per Conv node, its shapes, strides,
// padding, dilation and groups baked in as constants (spatial dims aligned right in three, so one
// template serves 1d, 2d and 3d); the forward lines allocate the output and launch it. The bias is
// the first user of each template's epilogue slot: statements run on every accumulated value
// before its store, then a fused pointwise tail (make_epilogue, emit_epilogue.cpp). Triton and CUDA
// have two kernel forms, the axis `form` of their points: an implicit GEMM and a direct kernel.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "generate/emit.hpp"

namespace ok::generate {

namespace {

using nlohmann::json;

const int64_t kInt32Limit = (int64_t{1} << 31) - (int64_t{1} << 24);
// The fewest output channels a group needs for CUDA's implicit GEMM: its channel tiles are 32 wide
// or more, so below 4 at least 7 in 8 of its columns would be idle.
const int64_t kGemmMinChannels = 4;

// The shape and parameter slots every conv template shares.
json shape_context(const Conv& c, const std::string& name) {
  auto s = [](int64_t v) { return std::to_string(v); };
  json ctx = {{"name", name},
              {"N", s(c.batch)},
              {"CIN", s(c.cin)},
              {"COUT", s(c.cout)},
              {"G", s(c.groups)},
              {"CIN_G", s(c.cin_g())},
              {"COUT_G", s(c.cout_g())},
              {"TAPS", s(c.taps())},
              {"K_TOTAL", s(c.cin_g() * c.taps())},
              {"M_TOTAL", s(c.batch * c.out_pixels())},
              {"transposed", c.transposed ? "true" : "false"},
              {"TRANSPOSED", c.transposed ? "True" : "False"},
              {"has_bias", c.bias},
              {"work", s(c.macs())}};
  const char* dims[] = {"D", "H", "W"};
  for (int d = 0; d < 3; ++d) {
    ctx[fmt::format("I{}", dims[d])] = s(c.in[d]);
    ctx[fmt::format("O{}", dims[d])] = s(c.out[d]);
    ctx[fmt::format("K{}", dims[d])] = s(c.k[d]);
    ctx[fmt::format("S{}", dims[d])] = s(c.stride[d]);
    ctx[fmt::format("P{}", dims[d])] = s(c.pad[d]);
    ctx[fmt::format("D{}", dims[d])] = s(c.dil[d]);
  }
  return ctx;
}

// Whether any offset into x, the weight or y may pass int32 (masked lanes a block beyond).
bool needs_int64(const Conv& c) {
  const int64_t x = c.batch * c.cin * c.in_pixels(), y = c.batch * c.cout * c.out_pixels();
  return std::max({x, y, c.cin * c.cout_g() * c.taps()}) + 4096 >= kInt32Limit;
}

// The CUDA implicit GEMM's rows: the output pixels, a strided transposed conv's padded to whole
// phases (o % stride per dim: the template orders its rows by phase).
int64_t gemm_rows(const Conv& c) {
  const bool phased = c.transposed && (c.stride[0] > 1 || c.stride[1] > 1 || c.stride[2] > 1);
  int64_t rows = c.batch;
  for (int d = 0; d < 3; ++d) {
    const int64_t f = phased ? c.stride[d] : 1;
    rows *= f * ((c.out[d] + f - 1) / f);
  }
  return rows;
}

// forward's allocations: the value the kernel stores and the epilogue's other outputs.
std::vector<std::string> allocs(const Graph& g, const Node& n, const Epilogue& e) {
  return e.allocations(g, py_name(g, n.args[0].value) + ".device", true);
}

// The kernel's tensor arguments in forward: x, weight, [bias,] y, then the epilogue's.
std::vector<std::string> tensors(const Graph& g, const Node& n, const Epilogue& e) {
  std::vector<std::string> out = {py_name(g, n.args[0].value), py_name(g, n.args[1].value)};
  if (n.conv.bias) out.push_back(py_name(g, n.args[2].value));
  out.push_back(py_name(g, e.stored));
  for (int v : e.inputs) out.push_back(py_name(g, v));
  for (int v : e.outputs) out.push_back(py_name(g, v));
  return out;
}

std::string pointers(const Graph& g, const Node& n, const Epilogue& e) {
  std::string out;
  for (const auto& t : tensors(g, n, e))
    out += (out.empty() ? "" : ", ") + fmt::format("_ok_ptr({})", t);
  return out;
}

// The epilogue on the accumulated value `v` of output channel `co` at flat output index `index`
// (C++ and CUDA): the bias, then the fused pointwise group.
Epilogue cpp_epilogue(const Graph& g, const Node& n, const KernelGroup* G, const Skills& skills,
                      const std::string& lang, const std::string& index, int spaces, json& ctx) {
  Epilogue e = make_epilogue(g, G, n.out, skills, lang, {"v", index, ""});
  std::vector<std::string> lines;
  if (n.conv.bias) lines.push_back("v += bias[co];");
  lines.insert(lines.end(), e.lines.begin(), e.lines.end());
  ctx["epilogue"] = lines_at(lines, spaces);
  ctx["extra"] = e.signature();
  std::string call;
  for (const auto& name : e.names) call += ", " + name;
  ctx["extra_names"] = call;
  return e;
}

KernelCode cpu(const Graph& g, const Node& n, int index, const Skills& skills, const json& p,
               const KernelGroup* G) {
  const std::string name = fmt::format("ok_conv_{}", index);
  json ctx = shape_context(n.conv, name);
  for (const char* k : {"BCO", "BW"}) ctx[k] = std::to_string(p.at(k).get<int>());
  ctx["schedule"] = p.value("schedule", "static");
  Epilogue e = cpp_epilogue(g, n, G, skills, "cpp",
                            "((n * COUT + co) * OD + od) * OH * OW + oh * OW + ow0 + j", 8, ctx);
  std::vector<std::string> launch = allocs(g, n, e);
  launch.push_back(fmt::format("_ok_lib.{}({})", name, pointers(g, n, e)));
  return {render_skill(skills, "cpu", "conv", "kernel", ctx) + "\n", launch};
}

KernelCode triton(const Graph& g, const Node& n, int index, const Skills& skills, const json& p,
                  const KernelGroup* G) {
  const Conv& c = n.conv;
  const std::string name = fmt::format("_ok_conv_{}", index);
  json ctx = shape_context(c, name);
  const bool direct = p.value("form", "gemm") == "direct";
  for (const char* k : {"BLOCK_M", "BLOCK_N", "BLOCK_K", "BLOCK", "num_warps", "num_stages"})
    ctx[k] = std::to_string(p.at(k).get<int>());
  ctx["cast"] = needs_int64(c) ? ".to(tl.int64)" : "";
  Epilogue e = make_epilogue(
      g, G, n.out, skills, "triton",
      direct ? EpilogueSite{"acc", "offs", "mask"} : EpilogueSite{"acc", "y_off", "y_mask"});
  std::vector<std::string> lines;
  if (c.bias)
    lines.push_back(direct ? "acc += tl.load(b_ptr + co, mask=mask, other=0.0)"
                           : "acc += tl.load(b_ptr + co, mask=n_ok, other=0.0)[None, :]");
  lines.insert(lines.end(), e.lines.begin(), e.lines.end());
  ctx["epilogue"] = lines_at(lines, 4);
  std::string extra;
  for (const auto& prm : e.params) extra += prm + ", ";
  ctx["extra"] = extra;
  std::vector<std::string> args = tensors(g, n, e);
  std::string joined;
  for (const auto& a : args) joined += a + ", ";
  ctx["args"] = joined;
  const int64_t bm = p.at("BLOCK_M").get<int64_t>(), bn = p.at("BLOCK_N").get<int64_t>();
  ctx["grid"] = direct ? fmt::format("({},)", (c.batch * c.cout * c.out_pixels() +
                                               p.at("BLOCK").get<int64_t>() - 1) /
                                                  p.at("BLOCK").get<int64_t>())
                       : fmt::format("({}, {}, {})", (c.batch * c.out_pixels() + bm - 1) / bm,
                                     (c.cout_g() + bn - 1) / bn, c.groups);
  const char* form = direct ? "direct" : "gemm";
  std::string device = render_skill(skills, "triton", "conv", "prelude", json::object()) +
                       "\n\n\n" + render_skill(skills, "triton", "conv", form, ctx) + "\n";
  lines = allocs(g, n, e);
  for (auto& l :
       split_lines(render_skill(skills, "triton", "conv", fmt::format("launch_{}", form), ctx)))
    lines.push_back(std::move(l));
  return {device, lines};
}

KernelCode cuda(const Graph& g, const Node& n, int index, const Skills& skills, const json& p,
                const KernelGroup* G) {
  const Conv& c = n.conv;
  const std::string name = fmt::format("ok_conv_{}", index);
  json ctx = shape_context(c, name);
  auto at = [&p](const char* k) { return p.at(k).get<int64_t>(); };
  // A plan's convs share one point, chosen by the largest: a conv with too few output channels a
  // group for the GEMM (the depthwise half of a depthwise-separable pair) runs the direct kernel,
  // its TCO at most its channels.
  const bool direct = p.value("form", "gemm") == "direct" || c.cout_g() < kGemmMinChannels;
  ctx["launcher"] = fmt::format("ok_launch_conv_{}", index);
  Epilogue e;
  if (direct) {
    const int64_t threads = at("threads"), tco = std::min(at("TCO"), next_pow2(c.cout_g()));
    ctx["threads"] = std::to_string(threads);
    ctx["TCO"] = std::to_string(tco);
    // Input channels whose weights (TCO channels x taps) are staged at once: at most 32 KiB.
    ctx["CHUNK"] = std::to_string(
        std::clamp<int64_t>(8192 / std::max<int64_t>(1, c.taps() * tco), 1, c.cin_g()));
    e = cpp_epilogue(g, n, G, skills, "cuda",
                     "((n * COUT + co) * OD + od) * OH * OW + oh * OW + ow", 6, ctx);
    ctx["grid_x"] = std::to_string((c.batch * c.out_pixels() + threads - 1) / threads);
    ctx["grid_y"] = std::to_string(c.groups * ((c.cout_g() + tco - 1) / tco));
    ctx["grid_z"] = "1";
  } else {
    const int64_t bm = at("BM"), bn = at("BN");
    for (const char* k : {"BM", "BN", "BK", "TM", "TN"}) ctx[k] = std::to_string(at(k));
    ctx["threads"] = std::to_string((bm / at("TM")) * (bn / at("TN")));
    ctx["index_t"] = needs_int64(c) ? "long long" : "int";
    e = cpp_epilogue(g, n, G, skills, "cuda", "yi", 6, ctx);
    ctx["grid_x"] = std::to_string(((gemm_rows(c) + bm - 1) / bm) * ((c.cout_g() + bn - 1) / bn));
    ctx["grid_y"] = "1";
    ctx["grid_z"] = std::to_string(c.groups);
  }
  std::string code = render_skill(skills, "cuda", "conv", direct ? "direct" : "gemm", ctx) + "\n" +
                     render_skill(skills, "cuda", "conv", "launcher", ctx) + "\n";
  std::vector<std::string> launch = allocs(g, n, e);
  launch.push_back(fmt::format("_ok_check(_ok_lib.ok_launch_conv_{}({}, _ok_stream()))", index,
                               pointers(g, n, e)));
  return {code, launch};
}

bool cpu_admissible(const Skill& s, const json& p, const Conv& c, double& score) {
  const int64_t bco = p.at("BCO").get<int64_t>(), bw = p.at("BW").get<int64_t>();
  if (bco > next_pow2(c.cout_g()) || bw > std::max<int64_t>(16, next_pow2(c.out[2]))) return false;
  // Dynamic scheduling only where tasks differ: a transposed conv's taps that miss the stride.
  const bool uneven = c.transposed && (c.stride[0] > 1 || c.stride[1] > 1 || c.stride[2] > 1);
  if (!uneven && p.at("schedule") != s.params["schedule"][0]) return false;
  score += log2_distance(static_cast<double>(bco),
                         static_cast<double>(std::min<int64_t>(8, c.cout_g())));
  score += log2_distance(static_cast<double>(bw),
                         static_cast<double>(std::clamp<int64_t>(next_pow2(c.out[2]), 16, 64)));
  return true;
}

// Whether each of `keys` keeps its first value (a point's parameters of the other kernel form).
bool at_first(const Skill& s, const json& p, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (p.at(k) != s.params[k][0]) return false;
  return true;
}

// Triton: the implicit GEMM (M = output pixels, N = output channels of a group, K = input
// channels of a group x taps) wants N and K of 16 or more for tl.dot; the direct kernel suits the
// depthwise and other thin convolutions. Parameters of the other form keep their first value.
bool triton_admissible(const Skill& s, const json& p, const Conv& c, double& score) {
  auto at = [&p](const char* k) { return p.at(k).get<int64_t>(); };
  const bool direct = p.at("form") == "direct";
  const bool thin = c.cout_g() < 16 || c.cin_g() * c.taps() < 16;
  if (direct) {
    if (!at_first(s, p, {"BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages"})) return false;
    score += thin ? -8 : 8;
    score += log2_distance(static_cast<double>(at("num_warps")),
                           std::clamp(static_cast<double>(at("BLOCK")) / 128.0, 2.0, 8.0));
    return true;
  }
  if (!at_first(s, p, {"BLOCK"})) return false;
  const int64_t bm = at("BLOCK_M"), bn = at("BLOCK_N"), bk = at("BLOCK_K");
  if (bm > std::max<int64_t>(16, next_pow2(c.batch * c.out_pixels())) ||
      bn > std::max<int64_t>(16, next_pow2(c.cout_g())) ||
      bk > std::max<int64_t>(16, next_pow2(c.cin_g() * c.taps())))
    return false;
  if ((bm + bn) * bk * 4 * at("num_stages") > 200 * 1024) return false;  // shared memory
  if (bm * bn / (32 * at("num_warps")) > 256) return false;              // accumulator registers
  score += log2_distance(static_cast<double>(at("num_warps")),
                         std::clamp(static_cast<double>(bm * bn) / 2048.0, 2.0, 8.0));
  return true;
}

// CUDA: the implicit GEMM (as Triton's, in FFMA) where the group has channels enough to share each
// gathered input; the direct kernel for thin convolutions (depthwise) and for transposed ones
// whose stride leaves most taps of every output outside the input where the GEMM cannot skip them
// (it skips a tap's slices for a pixel tile of one phase when BK divides the group's input
// channels; otherwise it multiplies their zeros, which the direct kernel skips). Parameters of the
// other form keep their first value.
bool cuda_admissible(const Skill& s, const json& p, const Conv& c, double& score) {
  auto at = [&p](const char* k) { return p.at(k).get<int64_t>(); };
  const int64_t k_total = c.cin_g() * c.taps();
  const bool thin = c.cout_g() < 16 || k_total < 16;
  const int64_t phases = c.transposed ? c.stride[0] * c.stride[1] * c.stride[2] : 1;
  const bool sparse_taps = phases >= 8 && c.cin_g() % 8 != 0;  // at most 1 tap in 8 counts
  if (p.at("form") == "direct") {
    if (!at_first(s, p, {"BM", "BN", "BK", "TM", "TN"})) return false;
    const int64_t tco = at("TCO"), threads = at("threads");
    if (tco > next_pow2(c.cout_g())) return false;
    if (c.taps() * tco > 8192) return false;  // one input channel's weights in 32 KiB
    score += thin || sparse_taps ? -8 : 8;
    score += log2_distance(static_cast<double>(tco),
                           static_cast<double>(std::min<int64_t>(8, next_pow2(c.cout_g()))));
    // Small outputs: fewer threads per block, more blocks.
    if (c.batch * c.out_pixels() < 132 * threads) score += 1;
    return true;
  }
  if (!at_first(s, p, {"threads", "TCO"}) || c.cout_g() < kGemmMinChannels) return false;
  const int64_t bm = at("BM"), bn = at("BN"), bk = at("BK");
  const int64_t threads = (bm / at("TM")) * (bn / at("TN"));
  if (threads < 64 || threads > 512 || threads % bm != 0 || threads / bm > bk) return false;
  if (bm > std::max<int64_t>(32, next_pow2(gemm_rows(c))) ||
      bn > std::max<int64_t>(32, next_pow2(c.cout_g())) ||
      bk > std::max<int64_t>(8, next_pow2(k_total)))
    return false;
  if (2 * bk * (bm + bn + 4) * 4 > 48 * 1024) return false;  // double-buffered static shared memory
  if (c.groups > 65535) return false;                        // blockIdx.z
  score += log2_distance(static_cast<double>(threads), 256.0);
  // A BK that divides the group's input channels keeps each K slice within one tap (K is
  // tap-major): one bounds test per slice instead of one per gathered element, and a strided
  // transposed conv's unreachable taps skipped.
  if (c.cin_g() % bk != 0 && c.cin_g() % 8 == 0) score += phases > 1 ? 8 : 2;
  // Channel tiles past the group's channels compute nothing (96 channels in BN 64: a quarter idle).
  const int64_t tiles_n = (c.cout_g() + bn - 1) / bn;
  score += 3.0 * (static_cast<double>(tiles_n * bn) / static_cast<double>(c.cout_g()) - 1.0);
  const int64_t blocks = ((gemm_rows(c) + bm - 1) / bm) * tiles_n * c.groups;
  if (blocks < 264 && bm * bn > 64 * 64) score += 2;  // fewer than 2 blocks per SM
  return true;
}

}  // namespace

bool conv_admissible(const Skill& s, json& p, const Conv& c, double& score) {
  if (s.backend == "cpu") return cpu_admissible(s, p, c, score);
  if (s.backend == "triton") return triton_admissible(s, p, c, score);
  return cuda_admissible(s, p, c, score);
}

std::string describe_conv(const Conv& c) {
  auto dims = [&c](const std::array<int64_t, 3>& v) {
    std::string out;
    for (int d = 3 - c.dims; d < 3; ++d) out += (out.empty() ? "" : "x") + std::to_string(v[d]);
    return out;
  };
  std::string out = fmt::format("conv{}d{} {} -> {} channels, kernel {}, out {} x {}", c.dims,
                                c.transposed ? " transposed" : "", c.cin, c.cout, dims(c.k),
                                c.batch, dims(c.out));
  if (c.stride != std::array<int64_t, 3>{1, 1, 1}) out += ", stride " + dims(c.stride);
  if (c.pad != std::array<int64_t, 3>{0, 0, 0}) out += ", padding " + dims(c.pad);
  if (c.dil != std::array<int64_t, 3>{1, 1, 1}) out += ", dilation " + dims(c.dil);
  if (c.groups > 1) out += fmt::format(", {} groups", c.groups);
  if (c.depthwise()) out += " (depthwise)";
  if (c.bias) out += ", bias";
  return out;
}

KernelCode emit_conv(const Graph& g, const Node& n, int index, const std::string& backend,
                     const Skills& skills, const json& params, const KernelGroup* epilogue) {
  if (backend == "cpu") return cpu(g, n, index, skills, params, epilogue);
  if (backend == "triton") return triton(g, n, index, skills, params, epilogue);
  return cuda(g, n, index, skills, params, epilogue);
}

}  // namespace ok::generate
