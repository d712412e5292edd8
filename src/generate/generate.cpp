#include "generate/generate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <functional>

#include "generate/emit.hpp"
#include "generate/graph.hpp"
#include "generate/plan.hpp"
#include "generate/skills.hpp"

namespace ok::generate {

namespace {

using nlohmann::json;

// What the priors look at.
struct Features {
  int64_t full = 0;   // largest element count of a pointwise group
  int64_t red = 0;    // largest reduced length of a row group
  int64_t inner = 1;  // inner extent of that row group
  int64_t outer = 1;
  bool transcendental = false;
  Gemm gemm;              // the largest matrix product
  bool epilogue = false;  // some product runs a fused tail (no split-K then)
  int64_t row_n = 0;      // the widest product with a row epilogue (its N), or 0
  Conv conv;              // the largest convolution
  WindowShape window;     // the largest window step (kind empty: none)
};

// Every combination of a skill's parameter axes, in axis order.
std::vector<json> product(const json& axes) {
  std::vector<json> out{json::object()};
  for (const auto& [name, values] : axes.items()) {
    std::vector<json> next;
    for (const auto& partial : out)
      for (const auto& v : values) {
        json p = partial;
        p[name] = v;
        next.push_back(std::move(p));
      }
    out = std::move(next);
  }
  return out;
}

int axis_rank(const json& axes, const json& p) {
  int rank = 0;
  for (const auto& [name, values] : axes.items())
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i] == p[name]) rank += static_cast<int>(i);
  return rank;
}

// Drops points that cannot apply to these shapes; adjusts the prior of the rest (lower = better).
bool admissible(const Skill& s, json& p, const Features& f, double& score) {
  score = axis_rank(s.params, p);
  if (s.pattern == "gemm") return gemm_admissible(s, p, f.gemm, f.epilogue, f.row_n, score);
  if (s.pattern == "conv") return conv_admissible(s, p, f.conv, score);
  if (s.pattern == "window") return window_admissible(s, p, f.window, score);
  if (p.contains("fast_math") && p["fast_math"].get<bool>() && !f.transcendental) return false;
  if (s.id == "cpu-row") {
    if (f.inner == 1 && p["tile"] != s.params["tile"][0]) return false;  // tile is for inner > 1
    if (f.inner > 1)
      score += std::abs(std::log2(static_cast<double>(p["tile"].get<int>())) -
                        std::log2(static_cast<double>(std::min<int64_t>(f.inner, 256))));
  }
  if (s.id == "triton-pointwise") {
    int64_t block = p["BLOCK"].get<int64_t>();
    if (block > next_pow2(f.full) && block != s.params["BLOCK"][0].get<int64_t>()) return false;
    if (f.full < (1 << 20)) score += block / 1024.0;  // small tensors: more programs
    double ideal = std::clamp(static_cast<double>(block) / 256.0, 2.0, 8.0);
    score += std::fabs(std::log2(p["num_warps"].get<double>()) - std::log2(ideal));
  }
  if (s.id == "triton-row") {
    std::string mode = p["mode"].get<std::string>();
    int64_t br = p["BLOCK_R"].get<int64_t>();
    int64_t bj = p["BLOCK_J"].get<int64_t>();
    if (f.inner == 1) {
      if (bj != 1) return false;
      if (mode == "tile") {
        if (next_pow2(f.red) > 16384 || br != 0) return false;
      } else if (br == 0 || br > next_pow2(f.red)) {
        return false;
      }
    } else {
      if (bj == 1) return false;
      if (mode == "tile") {
        if (br != 0 || next_pow2(f.red) * bj > 8192) return false;
      } else if (br == 0 || br > next_pow2(f.red)) {
        return false;
      }
      // The smallest BLOCK_J (16) serves any inner extent up to it (a [N, C, 3] row group).
      if (bj > std::max<int64_t>(16, next_pow2(f.inner))) return false;
    }
    if (mode == "loop" && f.inner == 1 && br < 256) return false;
    if (mode == "loop" && f.inner > 1 && (br > 64 || br * bj > 8192)) return false;
    // About 8-16 elements per thread in a block.
    int64_t elems = (mode == "tile" ? next_pow2(f.red) : br) * bj;
    double ideal = std::clamp(static_cast<double>(elems) / 512.0, 2.0, 16.0);
    score += 2 * std::fabs(std::log2(p["num_warps"].get<double>()) - std::log2(ideal));
    if (mode == "tile") {
      score -= 4;
      p["BLOCK_R"] = next_pow2(f.red);  // shown as used
    }
  }
  if (s.id == "cuda-pointwise") {
    if (p["vec"].get<int>() == 4 && f.full % 4 != 0) return false;
  }
  if (s.id == "cuda-row") {
    int tj = p["TJ"].get<int>();
    int tr = p["TR"].get<int>();
    int vec = p["vec"].get<int>();
    if (f.inner == 1 && tj != 1) return false;
    if (f.inner > 1 && (tj == 1 || vec != 1)) return false;
    if (f.inner > 1 && tj > next_pow2(f.inner) && tj != 32) return false;
    if (vec == 4 && f.red % 4 != 0) return false;
    if (tj == 1 && tr < 32) return false;
    if (tj * tr > 1024) return false;
    if (f.inner == 1 && tr * vec > next_pow2(f.red) && tr > 32) return false;
    if (f.inner > 1) {
      // Enough rows of threads for long reductions, few for short ones.
      double ideal_tr = std::clamp(static_cast<double>(f.red) / 64.0, 1.0, 32.0);
      score += std::fabs(std::log2(static_cast<double>(tr)) - std::log2(ideal_tr));
    }
  }
  return true;
}

std::vector<json> space(const Skill& s, const Features& f, uint64_t seed) {
  std::vector<std::pair<double, json>> scored;
  for (auto& p : product(s.params)) {
    double score = 0;
    if (admissible(s, p, f, score)) scored.emplace_back(score, std::move(p));
  }
  auto tie = [seed](const json& p) {
    return std::hash<std::string>{}(p.dump()) ^ (seed * 0x9E3779B97F4A7C15ull);
  };
  std::stable_sort(scored.begin(), scored.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return seed != 0 && tie(a.second) < tie(b.second);
  });
  std::vector<json> out;
  for (auto& [score, p] : scored) out.push_back(std::move(p));
  return out;
}

// Index tuples into spaces of `sizes` (none empty), by increasing sum of indices (the best prior
// of each first), in lexicographic order within a sum; at most `limit` (0: all).
std::vector<std::vector<size_t>> by_rank_sum(const std::vector<size_t>& sizes, size_t limit) {
  const size_t n = sizes.size();
  std::vector<size_t> cap(n + 1, 0);  // cap[k]: the largest index sum of spaces k..n-1
  for (size_t k = n; k-- > 0;) cap[k] = cap[k + 1] + sizes[k] - 1;
  std::vector<std::vector<size_t>> out;
  std::vector<size_t> cur(n, 0);
  std::function<void(size_t, size_t)> fill = [&](size_t k, size_t left) {
    if (limit && out.size() >= limit) return;
    if (k + 1 == n) {
      cur[k] = left;
      out.push_back(cur);
      return;
    }
    for (size_t i = 0; i <= left && i < sizes[k]; ++i) {
      if (left - i > cap[k + 1]) continue;
      cur[k] = i;
      fill(k + 1, left - i);
    }
  };
  for (size_t s = 0; s <= cap[0] && !(limit && out.size() >= limit); ++s) fill(0, s);
  return out;
}

// "gemm 16 x [64 x 48] @ [48 x 32], A transposed, lower triangle": one line for humans.
std::string describe_gemm(const Gemm& gm) {
  std::string out = gm.batch > 1 ? fmt::format("gemm {} x ", gm.batch) : "gemm ";
  out += fmt::format("[{} x {}] @ [{} x {}]", gm.m, gm.k, gm.k, gm.n);
  if (gm.trans_a) out += ", A transposed";
  if (gm.trans_b) out += ", B transposed";
  if (gm.triangle != Triangle::kNone)
    out += gm.triangle == Triangle::kLower ? ", lower triangle" : ", upper triangle";
  return out;
}

bool identifier_path(const std::string& path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('.', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part.empty() || std::isdigit(static_cast<unsigned char>(part[0]))) return false;
    for (char c : part)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    start = end + 1;
  }
  return true;
}

std::string shape_tuple(const Shape& s) {
  return shape_str(s);
}

std::string py_operand(const Graph& g, const Operand& o) {
  if (o.is_none()) return "None";
  if (o.is_scalar()) return literal(o.scalar, "triton");
  return py_name(g, o.value);
}

struct Assembled {
  std::string device;  // all kernels
  std::vector<std::string> forward;
};

std::string header(const std::string& pattern, const std::string& skill, const json& params,
                   const std::string& description) {
  return fmt::format(
      "# Generated by OpenKernel's builtin generator (templates, no LLM).\n"
      "# pattern: {}\n# skill: {}\n# params: {}\n# {}\n",
      pattern, skill, params.dump(), description);
}

// A native backend's kernels: the skill prelude and `device` as one raw string, compiled at
// import by openkernel_worker.native's `compile` (`names`: what else the module imports from
// there) with `flags` added to its defaults `default_flags`.
std::string native_library(const Skills& skills, const std::string& backend,
                           const std::string& device, const std::string& default_flags,
                           const std::string& compile, const std::string& names,
                           const std::string& flags) {
  return fmt::format(
      "from openkernel_worker.native import {0} as _OK_FLAGS, {1} as _ok_{1}, ptr as "
      "_ok_ptr{2}\n\n_OK_SOURCE = r\"\"\"\n{3}\n{4}\"\"\"\n"
      "_ok_lib = _ok_{1}(_OK_SOURCE, flags=_OK_FLAGS{5}, name=\"ok_builtin\")\n",
      default_flags, compile, names,
      render_skill(skills, backend, "pointwise", "prelude", json::object()), device, flags);
}

// The generated module's kernel library for `backend`: its imports, the skill prelude and the
// kernels in `device` (compiled at import for cpu and cuda; `fast`: fast math).
std::string kernel_library(const Skills& skills, const std::string& backend,
                           const std::string& device, bool fast) {
  if (backend == "cpu")
    return native_library(skills, "cpu", device, "DEFAULT_FLAGS", "compile_cpp", "",
                          fast ? " + (\"-ffast-math\",)" : " + (\"-fno-math-errno\",)");
  if (backend == "cuda")
    return "import ctypes as _ok_ctypes\n" +
           native_library(skills, "cuda", device, "DEFAULT_CUDA_FLAGS", "compile_cuda",
                          ", stream as _ok_stream", fast ? " + (\"--use_fast_math\",)" : "") +
           "\n\ndef _ok_check(err):\n    if err != 0:\n"
           "        raise RuntimeError(f\"CUDA error {err} in a generated kernel\")\n";
  return "import triton\nimport triton.language as tl\n"
         "try:\n    from triton.language.extra import libdevice\nexcept ImportError:  # older "
         "triton\n"
         "    from triton.language.extra.cuda import libdevice\n\n" +
         render_skill(skills, "triton", "pointwise", "prelude", json::object()) + "\n\n" + device;
}

const KernelGroup* epilogue_of(const Plan& plan, const Step& step) {
  return step.epilogue >= 0 ? &plan.groups[step.epilogue] : nullptr;
}

std::string assemble(const Graph& g, const Plan& plan, const std::string& backend,
                     const std::string& reference, const Skills& skills, const json& kparams,
                     const std::string& head) {
  std::vector<std::string> fwd;
  std::string device;
  // Inputs and attrs: contiguous, named once; constants: the values the kernels were made for.
  std::vector<std::string> args = g.forward_args();
  for (int v : g.inputs) fwd.push_back(fmt::format("{0} = {0}.contiguous()", g.values[v].name));
  for (const auto& c : g.constants)
    fwd.push_back(fmt::format(
        "if {0} != {1}:\n            raise ValueError(f\"generated for {0}={1}, got {{{0}}}\")",
        c.name, fmt::format("{}", c.value)));
  for (size_t v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    if (val.kind != ValueKind::kAttr) continue;
    std::string access = identifier_path(val.name)
                             ? "self." + val.name
                             : fmt::format("_ok_attr(self, \"{}\")", val.name);
    fwd.push_back(fmt::format("{} = {}.contiguous()", py_name(g, static_cast<int>(v)), access));
  }
  for (const auto& step : plan.steps) {
    if (step.kind == StepKind::kVendor) {
      const Node& n = g.nodes[step.node];
      std::vector<std::string> a;
      for (const auto& o : n.args) a.push_back(py_operand(g, o));
      std::string call;
      std::string joined;
      for (size_t i = 0; i < a.size(); ++i) joined += (i ? ", " : "") + a[i];
      if (n.op == "module") {
        std::string target = n.params["target"].get<std::string>();
        call = identifier_path(target) ? fmt::format("self.{}({})", target, joined)
                                       : fmt::format("_ok_attr(self, \"{}\")({})", target, joined);
      } else if (n.op == "linear") {
        call = fmt::format("_ok_torch.nn.functional.linear({})", joined);
      } else {
        call = fmt::format("_ok_torch.{}({})", n.op, joined);
      }
      fwd.push_back(fmt::format("{} = {}.contiguous()", py_name(g, n.out), call));
    } else if (step.kind == StepKind::kGemm) {
      KernelCode code = emit_gemm(g, g.nodes[step.node], step.node, backend, skills,
                                  kparams.value("gemm", json::object()), epilogue_of(plan, step));
      device += code.device + "\n";
      for (auto& l : code.launch) fwd.push_back(std::move(l));
    } else if (step.kind == StepKind::kConv) {
      KernelCode code = emit_conv(g, g.nodes[step.node], step.node, backend, skills,
                                  kparams.value("conv", json::object()), epilogue_of(plan, step));
      device += code.device + "\n";
      for (auto& l : code.launch) fwd.push_back(std::move(l));
    } else if (step.kind == StepKind::kWindow) {
      KernelCode code = emit_window(g, g.nodes[step.node], step.node, backend, skills,
                                    kparams.value("window", json::object()));
      device += code.device + "\n";
      for (auto& l : code.launch) fwd.push_back(std::move(l));
    } else if (step.kind == StepKind::kView) {
      const Node& n = g.nodes[step.node];
      fwd.push_back(fmt::format("{} = {}.reshape({})", py_name(g, n.out),
                                py_name(g, n.args[0].value), shape_tuple(g.values[n.out].shape)));
    } else {
      const KernelGroup& G = plan.groups[step.group];
      std::string dev = py_name(g, G.leaves.front()) + ".device";
      for (int v : G.outputs)
        fwd.push_back(fmt::format("{} = _ok_torch.empty({}, device={}, dtype=_ok_torch.{})",
                                  py_name(g, v), shape_tuple(g.values[v].shape), dev,
                                  g.values[v].dtype == "int64" ? "int64" : "float32"));
      KernelCode code = backend == "cpu"      ? emit_cpu(g, G, step.group, skills, kparams)
                        : backend == "triton" ? emit_triton(g, G, step.group, skills, kparams)
                                              : emit_cuda(g, G, step.group, skills, kparams);
      device += code.device + "\n";
      for (auto& l : code.launch) fwd.push_back(std::move(l));
    }
  }
  fwd.push_back("return " + py_name(g, g.output));

  std::string out = head + "\n" + reference;
  if (!out.empty() && out.back() != '\n') out += "\n";
  out += "\n\n# ---- OpenKernel builtin kernels ----\nimport torch as _ok_torch\n";
  out += "import functools as _ok_functools\n";
  out += kernel_library(skills, backend, device, kparams.value("fast_math", false));
  out +=
      "\n\ndef _ok_attr(module, path):\n    return _ok_functools.reduce(getattr, "
      "path.split(\".\"), module)\n";
  out += "\n\nclass ModelNew(Model):\n";
  std::string sig;
  for (const auto& a : args) sig += ", " + a;
  out += fmt::format("    def forward(self{}):\n", sig);
  for (const auto& l : fwd) out += "        " + l + "\n";
  return out;
}

// A candidate and its prior rank (lower = better) among every plan's candidates.
struct Ranked {
  size_t rank = 0;
  GeneratedCandidate candidate;
};

// What every plan of one proposal shares.
struct Request {
  const std::string& backend;
  const std::string& reference;
  const Skills& skills;
  const std::filesystem::path& skills_dir;
  uint64_t seed = 0;
  size_t want = 0;  // candidates wanted (0: all)
};

// The kinds of kernel a plan may have, each with its own skill and parameter space.
constexpr std::array<const char*, 5> kKinds = {"pointwise", "row", "gemm", "conv", "window"};
using KindFeatures = std::array<std::pair<bool, Features>, kKinds.size()>;

// The per-kind features the priors look at (in kKinds' order) and which kinds the plan has.
KindFeatures plan_features(const Graph& g, const Plan& plan) {
  KindFeatures f{};
  auto& [any_pointwise, pf] = f[0];
  auto& [any_row, rf] = f[1];
  auto& [any_gemm, gf] = f[2];
  auto& [any_conv, cf] = f[3];
  auto& [any_window, wf] = f[4];
  for (const auto& step : plan.steps) {
    if (step.kind == StepKind::kWindow) {
      const WindowShape ws = window_shape(g, g.nodes[step.node]);
      if (!any_window ||
          ws.outer * ws.len * ws.inner > wf.window.outer * wf.window.len * wf.window.inner)
        wf.window = ws;
      any_window = true;
    }
    if (step.kind == StepKind::kConv) {
      const Conv& cv = g.nodes[step.node].conv;
      if (!any_conv || cv.macs() > cf.conv.macs()) cf.conv = cv;
      any_conv = true;
    }
    if (step.kind != StepKind::kGemm) continue;
    gf.epilogue |= step.epilogue >= 0;
    const Gemm& gm = g.nodes[step.node].gemm;
    if (step.epilogue >= 0 && plan.groups[step.epilogue].row) gf.row_n = std::max(gf.row_n, gm.n);
    if (!any_gemm ||
        gm.batch * gm.m * gm.n * gm.k > gf.gemm.batch * gf.gemm.m * gf.gemm.n * gf.gemm.k)
      gf.gemm = gm;
    any_gemm = true;
  }
  for (const auto& G : plan.groups) {
    if (G.fused_into >= 0) continue;  // in a product's epilogue: no kernel of its own
    if (G.row) {
      any_row = true;
      if (G.red * G.outer * G.inner >= rf.red * rf.outer * rf.inner) {
        rf.red = G.red;
        rf.inner = G.inner;
        rf.outer = G.outer;
      }
      rf.transcendental |= G.has_transcendental;
    } else {
      any_pointwise = true;
      pf.full = std::max(pf.full, G.full);
      pf.transcendental |= G.has_transcendental;
    }
  }
  return f;
}

std::string describe_plan(const Graph& g, const Plan& plan, const std::string& backend) {
  std::string desc = fmt::format("{} on {}: ", plan.pattern, backend);
  int k = 0;
  for (const auto& step : plan.steps) {
    const std::string tail = step.epilogue >= 0
                                 ? fmt::format(" with its {} tail ({} ops) in the epilogue",
                                               plan.groups[step.epilogue].row ? "row" : "pointwise",
                                               plan.groups[step.epilogue].nodes.size())
                                 : "";
    if (step.kind == StepKind::kGemm) {
      desc += (k++ ? "; " : "") + describe_gemm(g.nodes[step.node].gemm) + tail;
      continue;
    }
    if (step.kind == StepKind::kConv) {
      desc += (k++ ? "; " : "") + describe_conv(g.nodes[step.node].conv) + tail;
      continue;
    }
    if (step.kind == StepKind::kWindow) {
      desc += (k++ ? "; " : "") + describe_window(g, g.nodes[step.node]);
      continue;
    }
    if (step.kind != StepKind::kKernel) continue;
    const KernelGroup& G = plan.groups[step.group];
    desc += (k++ ? "; " : "") +
            (G.row ? fmt::format("{} over [{}, {}, {}]", G.pattern, G.outer, G.red, G.inner)
                   : fmt::format("pointwise over {} elements", G.full));
  }
  return desc;
}

// Appends the candidates of one plan of g to `out`, ranked after `plan_rank`; `plan_point` is
// the plan's own parameters (shown under "plan", empty when there is no choice) and `pattern` the
// graph's (every plan of one graph shows the pattern of its unsplit plan). Returns why the plan
// has none (empty when it has some).
util::Result<std::string> plan_candidates(const Graph& g, const Plan& plan, const Request& r,
                                          const json& plan_point, const std::string& pattern,
                                          size_t plan_rank, std::vector<Ranked>& out) {
  const auto features = plan_features(g, plan);
  std::array<const Skill*, kKinds.size()> used{};
  std::array<std::vector<json>, kKinds.size()> spaces;
  std::string skill_id;
  for (size_t k = 0; k < kKinds.size(); ++k) {
    spaces[k] = {json::object()};
    if (!features[k].first) continue;
    used[k] = r.skills.find(r.backend, kKinds[k]);
    if (!used[k])
      return fmt::format("no {} skill for the {} backend in {}", kKinds[k], r.backend,
                         r.skills_dir.string());
    spaces[k] = space(*used[k], features[k].second, r.seed);
    skill_id += (skill_id.empty() ? "" : "+") + used[k]->id;
  }
  const std::string desc = describe_plan(g, plan, r.backend);
  const size_t before = out.size();
  std::vector<size_t> sizes;
  for (const auto& sp : spaces) sizes.push_back(sp.size());
  if (std::find(sizes.begin(), sizes.end(), size_t{0}) != sizes.end())
    return "no point of the parameter space applies to these shapes";
  for (const auto& combo : by_rank_sum(sizes, r.want)) {
    json kparams = json::object();
    json shown = json::object();
    bool fast = false;
    for (size_t k = 0; k < kKinds.size(); ++k) {
      const json& point = spaces[k][combo[k]];
      kparams[kKinds[k]] = point;
      fast = fast || point.value("fast_math", false);
      if (used[k]) shown[used[k]->id] = point;
    }
    if (!plan_point.empty()) shown["plan"] = plan_point;
    kparams["fast_math"] = fast;
    Ranked c;
    c.rank = plan_rank;
    for (size_t i : combo) c.rank += i;
    c.candidate.pattern = pattern;
    c.candidate.skill = skill_id;
    c.candidate.params = shown;
    c.candidate.description = desc;
    try {
      c.candidate.source = assemble(g, plan, r.backend, r.reference, r.skills, kparams,
                                    header(pattern, skill_id, shown, desc));
    } catch (const EmitError& e) {
      return util::fail(util::ErrorKind::kInternal, "builtin generator: " + e.message);
    }
    out.push_back(std::move(c));
  }
  return out.size() == before ? "no point of the parameter space applies to these shapes" : "";
}

}  // namespace

util::Result<Proposal> propose(const nlohmann::json& graph, const std::string& backend,
                               const std::string& reference_source,
                               const std::filesystem::path& skills_dir, uint64_t seed,
                               int max_candidates) {
  if (backend != "cpu" && backend != "triton" && backend != "cuda")
    return util::fail(util::ErrorKind::kUsage,
                      fmt::format("unknown backend {} (cpu, triton or cuda)", backend));
  auto skills = load_skills(skills_dir);
  if (!skills) return std::unexpected(skills.error());
  auto lowered = lower(graph, *skills);
  if (!lowered) return std::unexpected(lowered.error());
  Proposal out;
  if (!lowered->unsupported.empty()) {
    out.reason = lowered->unsupported;
    return out;
  }
  const Request req{backend, reference_source,
                    *skills, skills_dir,
                    seed,    max_candidates > 0 ? static_cast<size_t>(max_candidates) : 0};
  // The graph's pattern is that of its plan as written; one plan per split count of its long
  // reductions (none: that plan alone), best prior first.
  Planned whole = make_plan(lowered->graph, *skills, backend);
  if (!whole.unsupported.empty()) {
    out.reason = whole.unsupported;
    return out;
  }
  out.pattern = whole.plan.pattern;
  std::vector<int64_t> splits = split_options(lowered->graph);
  if (splits.empty()) splits.push_back(1);
  const bool fused = whole.plan.pattern.find(":epilogue[") != std::string::npos;
  if (fused)  // a row epilogue: one kernel, before the split plans
    std::stable_partition(splits.begin(), splits.end(), [](int64_t s) { return s == 1; });
  // On a GPU the fused plan has only its row tiles' parallelism: the plan without row epilogues is
  // offered too, first where the fused one would leave the device idle (row_epilogue_idles).
  const bool plain = fused && backend != "cpu";
  const size_t late = plain && row_epilogue_idles(lowered->graph, whole.plan) ? 1 : 0;
  std::vector<Ranked> ranked;
  for (size_t i = 0; i < splits.size() + plain; ++i) {
    const bool alt = i == splits.size();
    const Graph g = split_reductions(lowered->graph, alt ? 1 : splits[i]);
    Planned planned = alt             ? make_plan(g, *skills)
                      : splits[i] > 1 ? make_plan(g, *skills, backend)
                                      : whole;
    if (!planned.unsupported.empty()) continue;
    json point = alt                 ? json{{"row_epilogue", false}}
                 : splits.size() > 1 ? json{{"split", splits[i]}}
                                     : json::object();
    const size_t rank = alt ? 1 - late : i + (i == 0 ? late : 0);
    auto why = plan_candidates(g, planned.plan, req, point, out.pattern, rank, ranked);
    if (!why) return std::unexpected(why.error());
    if (out.reason.empty()) out.reason = *why;
  }
  if (ranked.empty()) return out;
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Ranked& a, const Ranked& b) { return a.rank < b.rank; });
  if (req.want && ranked.size() > req.want) ranked.resize(req.want);
  for (auto& c : ranked) out.candidates.push_back(std::move(c.candidate));
  out.reason.clear();
  out.supported = true;
  return out;
}

}  // namespace ok::generate
