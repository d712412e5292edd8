// Window kernels for the three backends, from the window skills
// (data/skills/{cpu,triton,cuda}_window.json, templates pool, scan and argreduce): one kernel per
// window step (a kWindow pooling or scan node, or an argmax/argmin reduction), its shapes and
// window baked in as constants; the forward lines allocate the output and launch it.
#include <fmt/format.h>

#include <algorithm>

#include "generate/emit.hpp"

namespace ok::generate {

namespace {

using nlohmann::json;

std::string str(int64_t v) {
  return std::to_string(v);
}

int64_t cdiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

int64_t pool_total(const Window& w) {
  return w.outer * w.out[0] * w.out[1] * w.out[2];
}

bool is_arg(const Node& n) {
  return n.kind == NodeKind::kReduce;
}

// An arg reduction's input as [outer, R, inner] (its dims are contiguous).
Window arg_view(const Graph& g, const Node& n) {
  const WindowShape s = window_shape(g, n);
  Window w;
  w.outer = s.outer;
  w.len = s.len;
  w.inner = s.inner;
  return w;
}

// The slots of the template `kind` (pool, scan, argreduce) for node n.
json context(const Graph& g, const Node& n, const std::string& name, const std::string& lang) {
  json ctx = {{"name", name}, {"launcher", name + "_launch"}};
  if (is_arg(n)) {
    const Window w = arg_view(g, n);
    const bool max = n.reduce == ReduceKind::kArgmax;
    ctx.update({{"outer", str(w.outer)},
                {"red", str(w.len)},
                {"inner", str(w.inner)},
                {"what", max ? "maximum" : "minimum"},
                {"cmp", max ? ">" : "<"},
                {"init", max ? "float(\"-inf\")" : "float(\"inf\")"},
                {"combine", max ? "_ok_arg_combine_max" : "_ok_arg_combine_min"},
                {"rows", w.inner == 1},
                {"columns", w.inner > 1}});
    return ctx;
  }
  const Window& w = n.window;
  if (n.op == "scan") {
    const bool sum = w.combine == ReduceKind::kSum;
    const bool py = lang == "triton";
    ctx.update({{"outer", str(w.outer)},
                {"len", str(w.len)},
                {"inner", str(w.inner)},
                {"op", sum ? "+" : "*"},
                {"identity", sum ? (py ? "0.0" : "0.0f") : (py ? "1.0" : "1.0f")},
                {"scan", sum ? "tl.cumsum" : "tl.cumprod"},
                {"shift", w.exclusive ? "1" : "0"},
                {"rows", w.inner == 1},
                {"columns", w.inner > 1},
                {"masked", w.masked}});
    ctx["reverse"] = py ? json(w.reverse) : json(w.reverse ? "true" : "false");
    if (w.masked) ctx["mask_type"] = g.values[n.args[1].value].dtype == "bool" ? "bool" : "float";
    return ctx;
  }
  static constexpr const char* kAxis[3] = {"D", "H", "W"};
  for (int i = 0; i < 3; ++i) {
    const std::string a = kAxis[i];
    ctx["I" + a] = str(w.in[i]);
    ctx["O" + a] = str(w.out[i]);
    ctx["K" + a] = str(w.kernel[i]);
    ctx["S" + a] = str(w.stride[i]);
    ctx["P" + a] = str(w.padding[i]);
    ctx["D" + a] = str(w.dilation[i]);
  }
  ctx.update({{"outer", str(w.outer)},
              {"total", str(pool_total(w))},
              {"in_size", str(w.in[0] * w.in[1] * w.in[2])},
              {"max", n.op == "max_pool"},
              {"avg", n.op == "avg_pool"},
              {"divisor", str(w.divisor)},
              {"count_include_pad", w.count_include_pad && w.divisor == 0 ? "true" : "false"}});
  if (lang == "triton") {
    ctx["divisor"] = w.divisor > 0 ? json(str(w.divisor)) : json(false);
    ctx["count_include_pad"] = w.divisor == 0 && w.count_include_pad;
    ctx["count_exclude_pad"] = w.divisor == 0 && !w.count_include_pad;
  }
  return ctx;
}

std::string template_of(const Node& n) {
  return is_arg(n) ? "argreduce" : n.op == "scan" ? "scan" : "pool";
}

// The arguments every launch passes: the input, the mask of a masked scan, the output.
std::vector<std::string> tensors(const Graph& g, const Node& n) {
  std::vector<std::string> out = {py_name(g, n.args[0].value)};
  if (n.kind == NodeKind::kWindow && n.window.masked) out.push_back(py_name(g, n.args[1].value));
  out.push_back(py_name(g, n.out));
  return out;
}

std::string alloc(const Graph& g, const Node& n) {
  const Value& v = g.values[n.out];
  return fmt::format("{} = _ok_torch.empty({}, device={}.device, dtype=_ok_torch.{})",
                     py_name(g, n.out), shape_str(v.shape), py_name(g, n.args[0].value),
                     v.dtype == "int64" ? "int64" : "float32");
}

std::string joined(const std::vector<std::string>& parts, const std::string& wrap) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + fmt::format(fmt::runtime(wrap), p);
  return out;
}

int64_t inner_of(const Graph& g, const Node& n) {
  return window_shape(g, n).inner;
}

KernelCode cpu(const Graph& g, const Node& n, int index, const Skills& skills, const json& p) {
  const std::string name = fmt::format("ok_window_{}", index);
  json ctx = context(g, n, name, "cpp");
  const int64_t inner = inner_of(g, n);
  ctx["tile"] = str(std::min<int64_t>(p.at("tile").get<int64_t>(), inner));
  ctx["block"] = str(p.at("block").get<int64_t>());
  ctx["schedule"] = p.value("schedule", "static");
  return {render_skill(skills, "cpu", "window", template_of(n), ctx) + "\n",
          {alloc(g, n), fmt::format("_ok_lib.{}({})", name, joined(tensors(g, n), "_ok_ptr({})"))}};
}

KernelCode triton(const Graph& g, const Node& n, int index, const Skills& skills, const json& p) {
  const std::string name = fmt::format("_ok_window_{}", index);
  json ctx = context(g, n, name, "triton");
  const int64_t block = p.at("BLOCK").get<int64_t>(), warps = p.at("num_warps").get<int64_t>();
  const int64_t inner = inner_of(g, n);
  const int64_t bj = inner == 1 ? 1 : p.at("BLOCK_J").get<int64_t>();
  std::string grid, meta;
  if (is_arg(n)) {
    const Window w = arg_view(g, n);
    grid = fmt::format("({}, {})", w.outer, cdiv(w.inner, bj));
    meta = fmt::format("BLOCK_R={}, BLOCK_J={}", std::max<int64_t>(block / bj, 1), bj);
  } else if (n.op == "scan") {
    grid = inner == 1 ? fmt::format("({},)", n.window.outer)
                      : fmt::format("({}, {})", n.window.outer, cdiv(inner, bj));
    meta = fmt::format("BLOCK={}, BLOCK_J={}", block, bj);
  } else {
    grid = fmt::format("({},)", cdiv(pool_total(n.window), block));
    meta = fmt::format("BLOCK={}", block);
  }
  std::string device = render_skill(skills, "triton", "window", template_of(n), ctx) + "\n";
  if (is_arg(n))
    device =
        render_skill(skills, "triton", "window", "prelude", json::object()) + "\n\n\n" + device;
  return {device,
          {alloc(g, n), fmt::format("{}[{}]({}, {}, num_warps={})", name, grid,
                                    joined(tensors(g, n), "{}"), meta, warps)}};
}

KernelCode cuda(const Graph& g, const Node& n, int index, const Skills& skills, const json& p) {
  const std::string name = fmt::format("ok_window_{}", index);
  json ctx = context(g, n, name, "cuda");
  const int64_t threads = p.at("threads").get<int64_t>();
  ctx["threads"] = str(threads);
  ctx["items"] = str(p.at("items").get<int64_t>());
  const int64_t inner = inner_of(g, n);
  int64_t blocks = 0;
  if (is_arg(n) || n.op == "scan") {
    const Window w = is_arg(n) ? arg_view(g, n) : n.window;
    blocks = inner == 1 ? w.outer : cdiv(w.outer * inner, threads);
  } else {
    blocks = cdiv(pool_total(n.window), threads);
  }
  ctx["blocks"] = str(blocks);
  return {render_skill(skills, "cuda", "window", template_of(n), ctx) + "\n",
          {alloc(g, n), fmt::format("_ok_check(_ok_lib.{}({}, _ok_stream()))", name + "_launch",
                                    joined(tensors(g, n), "_ok_ptr({})"))}};
}

}  // namespace

KernelCode emit_window(const Graph& g, const Node& n, int index, const std::string& backend,
                       const Skills& skills, const json& params) {
  if (backend == "cpu") return cpu(g, n, index, skills, params);
  if (backend == "triton") return triton(g, n, index, skills, params);
  return cuda(g, n, index, skills, params);
}

// The window skills' admissible points: BLOCK_J (Triton) only where an inner extent > 1 uses it,
// tiles no larger than the work rounded up, schedule (CPU) only for pooling, items (CUDA) only
// for row scans; prior: a Triton program of about 8-16 elements per thread.
bool window_admissible(const Skill& s, const nlohmann::json& p, const WindowShape& f,
                       double& score) {
  auto at = [&p](const char* k) { return p.at(k).get<int64_t>(); };
  auto first = [&](const char* k) { return p.at(k) == s.params[k][0]; };
  const bool columns = f.kind != "pool" && f.inner > 1;
  if (s.backend == "cpu") {
    if (f.kind != "pool" && !first("schedule")) return false;
    if (!columns && !first("tile")) return false;
    if (f.kind != "scan" && !first("block")) return false;
    return true;
  }
  if (s.backend == "triton") {
    const int64_t block = at("BLOCK"), bj = at("BLOCK_J"), warps = at("num_warps");
    if (!columns && bj != 1) return false;
    if (columns && (bj == 1 || bj > std::max<int64_t>(16, next_pow2(f.inner)))) return false;
    if (f.kind == "scan" && columns && !first("BLOCK")) return false;
    if (f.kind == "argreduce" && block / bj < 2) return false;
    const int64_t work = f.kind == "pool" ? f.outer : f.len * (columns ? bj : 1);
    if (block > std::max<int64_t>(256, next_pow2(work))) return false;
    const int64_t elems = f.kind == "scan" && columns ? bj : block;
    score += 2 * log2_distance(static_cast<double>(warps),
                               std::clamp(static_cast<double>(elems) / 256.0, 1.0, 16.0));
    return warps * 32 <= std::max<int64_t>(64, elems);
  }
  const int64_t threads = at("threads");
  const bool rows_scan = f.kind == "scan" && !columns;
  if (!rows_scan && !first("items")) return false;
  if (rows_scan && threads * at("items") > std::max<int64_t>(512, next_pow2(f.len))) return false;
  return true;
}

// "scan:sum over [4, 100, 1]", "pool:max (2, 3, 37) from (2, 3, 50)": one line for humans.
std::string describe_window(const Graph& g, const Node& n) {
  const WindowShape w = window_shape(g, n);
  if (w.kind == "pool")
    return fmt::format("{} {} from {}", window_pattern(n), shape_str(g.values[n.out].shape),
                       shape_str(g.values[n.args[0].value].shape));
  return fmt::format("{} over [{}, {}, {}]", window_pattern(n), w.outer, w.len, w.inner);
}

}  // namespace ok::generate
