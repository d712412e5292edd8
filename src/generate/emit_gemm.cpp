// GEMM kernels for the three backends, from the gemm skills
// (data/skills/{cpu,triton,cuda}_gemm.json): one kernel per Gemm node, its shapes, strides and kept
// triangle baked in as constants; the forward lines allocate the output and launch it. A fused
// pointwise tail runs in each template's epilogue slot on the accumulated value
// (emit_epilogue.cpp); a fused row tail (a row epilogue) over whole output rows: Triton's tile
// covers N, the CPU's task and CUDA's block loop the row's column tiles. Also the gemm skills'
// admissible points (gemm_admissible).
#include <fmt/format.h>

#include "generate/emit.hpp"

namespace ok::generate {

namespace {

using nlohmann::json;

int64_t cdiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// PAD (pad_operands) applies where a leading dimension is not a multiple of 4 elements (rows not
// 16-byte aligned: level 1's problem 8, K = 2949 and N = 5921) or B is read along K (transposed).
bool pad_applies(const Gemm& gm) {
  return (gm.trans_a ? gm.m : gm.k) % 4 != 0 || gm.trans_b || gm.n % 4 != 0;
}

// Which operands PAD copies for the padded K `kp`: each whose rows are misaligned, both where K
// grows (the unmasked loop reads their zero tails), and a transposed B (into [K, N]).
struct PadCopies {
  bool a = false, b = false;
};
PadCopies pad_copies(const Gemm& gm, int64_t kp) {
  const bool grows = kp != gm.k;
  return {(gm.trans_a ? gm.m : gm.k) % 4 != 0 || grows, gm.trans_b || gm.n % 4 != 0 || grows};
}

// PAD's copies against the product, at an H100's rates (about 3 TB/s of copy, 50 TFLOP/s of fp32
// FMA): preferred where the bytes they move (12 an element: the zeroed buffer written, the operand
// read and written into it) take at most 5% of the product's time, bytes <= 0.003 x flops, and the
// product is large enough (2^32 multiply-adds) for the copies' launches not to count (measured on
// the H100: padded, a 33 x 29 x 17 product took 15x as long). Problem 8's copies come to about 3%
// by this model, level 2's nn.Linear products (128 rows, B the weight read along K) to about 80%:
// those keep their weight as it is.
bool pad_pays(const Gemm& gm, int64_t kp) {
  const double macs = static_cast<double>(gm.batch) * gm.m * gm.n * gm.k;
  const PadCopies c = pad_copies(gm, kp);
  const double a = c.a ? static_cast<double>(gm.batch_a ? gm.batch : 1) * gm.m * gm.k : 0;
  const double b = c.b ? static_cast<double>(gm.batch_b ? gm.batch : 1) * gm.k * gm.n : 0;
  return macs >= 4294967296.0 && 12 * (a + b) <= 0.003 * 2 * macs;
}

}  // namespace

bool gemm_admissible(const Skill& s, const json& p, const Gemm& gm, bool epilogue, int64_t row_n,
                     double& score) {
  auto at = [&p](const char* k) { return p.at(k).get<int64_t>(); };
  const bool triangle = gm.triangle != Triangle::kNone;
  if (s.backend == "cpu") {
    if (at("BM") > std::max<int64_t>(16, next_pow2(gm.m))) return false;
    if (at("BN") > std::max<int64_t>(32, next_pow2(gm.n))) return false;
    if (at("BK") > std::max<int64_t>(64, next_pow2(gm.k))) return false;
    if (at("BM") * row_n > (int64_t{1} << 21)) return false;  // the row buffer: 8 MiB at most
    return triangle || p.at("schedule") == s.params["schedule"][0];
  }
  if (s.backend == "triton") {
    const int64_t bm = at("BLOCK_M"), bn = at("BLOCK_N"), bk = at("BLOCK_K"), sk = at("SPLIT_K");
    if (bm > std::max<int64_t>(16, next_pow2(gm.m)) ||
        bn > std::max<int64_t>(32, next_pow2(std::max(gm.n, row_n))) ||
        bk > std::max<int64_t>(16, next_pow2(gm.k)))
      return false;
    // A row epilogue's tile is its whole row; tiles past 256 wide only for one.
    if (row_n > 0 ? bn != std::max<int64_t>(32, next_pow2(row_n)) : bn > 256) return false;
    if ((bm + bn) * bk * 4 * at("num_stages") > 200 * 1024) return false;  // shared memory
    // Accumulator registers (a row epilogue keeps a few more tiles' worth live).
    if (bm * bn / (32 * at("num_warps")) > (row_n > 0 ? 128 : 256)) return false;
    if (cdiv(gm.m, bm) == 1 && p.at("GROUP_M") != s.params["GROUP_M"][0]) return false;
    const int64_t tiles = cdiv(gm.m, bm) * cdiv(gm.n, bn) * gm.batch;
    if (sk > 1 && (epilogue || gm.k < 4096 || sk * bk * 4 > gm.k || tiles >= 264)) return false;
    // PAD copies operands into aligned, zero-padded buffers, B N-contiguous (pad_operands): only
    // where a leading dimension is misaligned or B is read along K; preferred where the product
    // dwarfs the copies.
    if (p.value("PAD", 0) == 1) {
      if (!pad_applies(gm)) return false;
      score += pad_pays(gm, cdiv(gm.k, bk * sk) * bk * sk) ? -2 : 2;  // else explored late
    }
    double ideal_split = gm.k >= 4096 ? std::clamp(264.0 / tiles, 1.0, 32.0) : 1.0;
    score += 2 * log2_distance(sk, ideal_split);
    score += log2_distance(at("num_warps"), std::clamp(bm * bn / 2048.0, 2.0, 8.0));
    if (tiles < 132 && sk == 1 && bm * bn > 64 * 64) score += 1;  // too few programs
    return true;
  }
  const int64_t bm = at("BM"), bn = at("BN"), bk = at("BK"), tm = at("TM"), tn = at("TN");
  const int64_t threads = (bm / tm) * (bn / tn);
  if (threads < 64 || threads > 512) return false;
  if (bm > std::max<int64_t>(32, next_pow2(gm.m)) || bn > std::max<int64_t>(32, next_pow2(gm.n)) ||
      bk > std::max<int64_t>(8, next_pow2(gm.k)))
    return false;
  if ((bm + bn) * bk * 4 > 48 * 1024) return false;  // static shared memory
  score += log2_distance(static_cast<double>(threads), 256.0);
  return true;
}

namespace {

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
  const bool row = G && G->row;
  ctx["row"] = row;
  ctx["tn"] = row ? "1" : "(N + BN - 1) / BN";
  Epilogue e = cpp_epilogue(g, n, row ? nullptr : G, skills, "cpp",
                            "bi * M * N + (i0 + i) * N + j0 + j", ctx);
  if (row) {  // the row epilogue: the row kernel's passes over the task's rows
    std::map<int, std::string> names;
    e = epilogue_params(G, n.out, "cpp", names);
    names[e.stored] = "c";
    ctx["extra"] = e.signature();
    ctx["red"] = std::to_string(G->red);
    ctx["rows"] = cpu_row_epilogue(g, *G, n.out, skills, names);
  }
  std::vector<std::string> launch = allocs(g, n, e);
  launch.push_back(fmt::format("_ok_lib.{}({})", name, pointers(g, n, e)));
  return {render_skill(skills, "cpu", "gemm", "kernel", ctx) + "\n", launch};
}

// PAD (pad_applies: misaligned rows, or B read along K; pad_copies says which): an operand is
// copied into a zeroed buffer whose K extent is a whole number of K steps (BLOCK_K x SPLIT_K) and
// whose contiguous extent is a multiple of 16, so rows start 16-byte aligned and the K loop runs
// unmasked; B always as [Kp, Np] with N contiguous (a transposed B, [N, K], is transposed by the
// copy: on the H100 the kernel read it along K at 0.47x eager where the same shapes along N ran at
// 0.85x); an A whose leading dimension is aligned is copied only when K grows (the loop then reads
// its zero tail). Adds the copies to `launch`, the buffers' strides to `ctx`, and wraps the tile
// offsets along a buffer's contiguous extent at its padded size, a multiple of 16 (a wrap at an odd
// N leaves Triton no contiguity to vectorize the loads by: on the H100 problem 8 ran as slow padded
// as not); returns the padded K. The zeros and copies are data movement (no compute op), O(MK + KN)
// against the product's O(MNK).
int64_t pad_operands(const Graph& g, const Node& n, int index, int64_t step, json& ctx,
                     std::vector<std::string>& launch) {
  const Gemm& gm = n.gemm;
  const int64_t kp = cdiv(gm.k, step) * step;
  auto s = [](int64_t v) { return std::to_string(v); };
  auto round16 = [](int64_t v) { return cdiv(v, 16) * 16; };
  // One operand as [rows_p, cols_p] (cols contiguous) from its [rows, cols], stored so or, where
  // `transpose`, stored [cols, rows]; returns the buffer's size.
  auto copy = [&](int arg, bool batched, int64_t rows, int64_t cols, int64_t rows_p, int64_t cols_p,
                  bool transpose = false) {
    const std::string src = py_name(g, n.args[arg].value);
    const std::string dst = fmt::format("_ok_p{}_{}", arg == 0 ? "a" : "b", index);
    const std::string lead = batched ? fmt::format("{}, ", gm.batch) : "";
    launch.push_back(
        fmt::format("{} = _ok_torch.zeros(({}{}, {}), device={}.device, dtype={}.dtype)", dst, lead,
                    rows_p, cols_p, src, src));
    launch.push_back(fmt::format("{}[..., :{}, :{}].copy_({}.reshape({}{}, {}){})", dst, rows, cols,
                                 src, lead, transpose ? cols : rows, transpose ? rows : cols,
                                 transpose ? ".transpose(-1, -2)" : ""));
    ctx[arg == 0 ? "a" : "b"] = dst;
    return rows_p * cols_p;
  };
  // A as stored: [M, K], or transposed [K, M]; B: [K, N], or transposed [N, K].
  const PadCopies copies = pad_copies(gm, kp);
  if (copies.a) {
    const int64_t size = gm.trans_a ? copy(0, gm.batch_a, gm.k, gm.m, kp, round16(gm.m))
                                    : copy(0, gm.batch_a, gm.m, gm.k, gm.m, kp);
    ctx["sam"] = s(gm.trans_a ? 1 : kp);
    ctx["sak"] = s(gm.trans_a ? round16(gm.m) : 1);
    ctx["sab"] = s(gm.batch_a ? size : 0);
    if (gm.trans_a) ctx["wrap_m"] = s(round16(gm.m));
  }
  if (copies.b) {  // B becomes [Kp, Np], N contiguous
    const int64_t size = copy(1, gm.batch_b, gm.k, gm.n, kp, round16(gm.n), gm.trans_b);
    ctx["sbk"] = s(round16(gm.n));
    ctx["sbn"] = "1";
    ctx["sbb"] = s(gm.batch_b ? size : 0);
    ctx["wrap_n"] = s(round16(gm.n));
  }
  return kp;
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
  ctx["a"] = py_name(g, n.args[0].value);
  ctx["b"] = py_name(g, n.args[1].value);
  // Tile offsets wrap at M and N, or at a padded buffer's contiguous extent (pad_operands).
  ctx["wrap_m"] = ctx["M"];
  ctx["wrap_n"] = ctx["N"];
  std::vector<std::string> padding;
  const int64_t step = p.at("BLOCK_K").get<int64_t>() * p.at("SPLIT_K").get<int64_t>();
  const bool padded = p.value("PAD", 0) == 1 && pad_applies(gm);
  const int64_t kp = padded ? pad_operands(g, n, index, step, ctx, padding) : gm.k;
  ctx["even_k"] = kp % step == 0 ? "True" : "False";  // every K step whole: no K mask
  // Offsets within a batch or across one: int64 once they may pass int32 (masked lanes included).
  const int64_t round = padded ? 16 : 0;  // the padded buffers' extents
  const int64_t largest = std::max({gm.batch * (gm.m + round) * kp, gm.batch * kp * (gm.n + round),
                                    gm.batch * gm.m * gm.n, (gm.m + bm) * (kp + bn) * 2});
  ctx["cast"] = largest >= (int64_t{1} << 31) - (int64_t{1} << 24) ? ".to(tl.int64)" : "";
  add_triangle(ctx, gm,
               outside(gm, "pid_m * BLOCK_M", "pid_m * BLOCK_M + BLOCK_M - 1", "pid_n * BLOCK_N",
                       "pid_n * BLOCK_N + BLOCK_N - 1"),
               keep(gm, "offs_cm[:, None]", "offs_cn[None, :]"), true);
  ctx["tiles"] = std::to_string(((gm.m + bm - 1) / bm) * ((gm.n + bn - 1) / bn));
  if (split && G) throw EmitError{"split-K cannot run an epilogue (its partial sums are added)"};
  const bool row = G && G->row;
  if (row && bn < gm.n) throw EmitError{"a row epilogue needs BLOCK_N to cover N"};
  ctx["row"] = row;
  Epilogue e = make_epilogue(
      g, row ? nullptr : G, n.out, skills, "triton",
      {"acc", fmt::format("bid * {} + offs_cm[:, None] * {} + offs_cn[None, :]", gm.m * gm.n, gm.n),
       "c_mask"});
  if (row) e.lines = triton_row_epilogue(g, *G, n.out, skills, gm, bn, e);
  std::string extra, extra_args;
  for (const auto& prm : e.params) extra += prm + ", ";
  for (int v : e.inputs) extra_args += py_name(g, v) + ", ";
  for (int v : e.outputs) extra_args += py_name(g, v) + ", ";
  ctx["extra"] = extra;
  ctx["extra_args"] = extra_args;
  ctx["epilogue"] = lines_at(e.lines, 4);
  ctx["out"] = py_name(g, e.stored);
  ctx["alloc"] = split ? "zeros" : "empty";
  ctx["shape"] = shape_str(g.values[e.stored].shape);
  ctx["device"] = py_name(g, n.args[0].value) + ".device";
  std::string device = render_skill(skills, "triton", "gemm", "prelude", json::object()) +
                       "\n\n\n" + render_skill(skills, "triton", "gemm", "kernel", ctx) + "\n";
  std::vector<std::string> launch = e.allocations(g, ctx["device"].get<std::string>(), false);
  for (auto& l : padding) launch.push_back(std::move(l));
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
  const bool row = G && G->row;
  ctx["row"] = row;
  ctx["tiles_n"] = row ? "1" : std::to_string((gm.n + bn - 1) / bn);
  Epilogue e = cpp_epilogue(g, n, row ? nullptr : G, skills, "cuda", "bi * M * N + i * N + j", ctx);
  std::string scratch;
  if (row) {  // the row epilogue: the block's rows through a scratch copy of the product
    std::map<int, std::string> names;
    e = epilogue_params(G, n.out, "cuda", names);
    names[e.stored] = "c";
    scratch = fmt::format("_ok_scratch_{}", index);
    ctx["extra"] = e.signature() + ", float* ep_scratch";
    std::string call;
    for (const auto& name : e.names) call += ", " + name;
    ctx["extra_names"] = call + ", ep_scratch";
    ctx["red"] = std::to_string(G->red);
    ctx["rows"] = cuda_row_epilogue(g, *G, n.out, skills, names, (bm / tm) * (bn / tn));
  }
  std::string code = render_skill(skills, "cuda", "gemm", "kernel", ctx) + "\n" +
                     render_skill(skills, "cuda", "gemm", "launcher", ctx) + "\n";
  std::vector<std::string> launch = allocs(g, n, e);
  if (row)
    launch.push_back(
        fmt::format("{} = _ok_torch.empty({}, device={}.device, "
                    "dtype=_ok_torch.float32)",
                    scratch, gm.batch * gm.m * gm.n, py_name(g, n.args[0].value)));
  launch.push_back(fmt::format("_ok_check(_ok_lib.ok_launch_gemm_{}({}{}, _ok_stream()))", index,
                               pointers(g, n, e),
                               row ? fmt::format(", _ok_ptr({})", scratch) : ""));
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
