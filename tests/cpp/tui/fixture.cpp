#include "fixture.hpp"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "optimize/agents.hpp"

namespace ok::tui::testing {

namespace {

using nlohmann::json;

constexpr double kEagerUs = 48.0, kCompileUs = 30.0;

struct Row {
  int number;
  const char* verdict;
  double speedup;  // 0: none
  const char* description;
  const char* intent;
  const char* flags;  // comma-separated
  const char* error;
};

constexpr std::array<Row, 13> kRows = {{
    {1, "correct", 1.12, "BLOCK=256 num_warps=4", "baseline: one program per block", "", ""},
    {2, "correct", 1.45, "BLOCK=1024 num_warps=4", "larger blocks", "", ""},
    {3, "compile_error", 0, "BLOCK=2048 vectorised loads", "vectorise loads (128-bit)", "",
     "triton.compiler.errors.CompilationError: at 12:8: tl.multiple_of expects a tensor"},
    {4, "correct", 0.87, "fp32 accumulate, BLOCK=512", "accumulate in fp32", "", ""},
    {5, "incorrect", 0, "fast exp approximation", "approximate the sigmoid", "",
     "max abs error 3.1e-02 exceeds atol 1e-05 (output 0, element 4817)"},
    {6, "correct", 1.92, "BLOCK=2048 num_warps=8", "more warps per program", "", ""},
    {7, "rejected", 0, "torch.sigmoid fallback", "use the library sigmoid", "no_custom_kernel",
     "the forward ran no kernel of the candidate's own"},
    {8, "correct", 2.31, "BLOCK=4096 num_warps=8, eviction hints", "cache hints on streams", "",
     ""},
    {9, "timeout", 0, "grid-stride loop, BLOCK=64", "grid-stride loop", "",
     "the candidate ran past 30 s"},
    {10, "generation_failed", 0, "", "split the tensor in two launches", "",
     "the model's reply had no code block"},
    {11, "correct", 2.18, "BLOCK=4096 num_warps=16", "more warps per program",
     "torch_ops_in_forward", ""},
    {12, "correct", 2.47, "persistent grid, BLOCK=4096", "persistent programs", "", ""},
    {13, "runtime_error", 0, "persistent grid, unmasked tail", "drop the tail mask", "",
     "CUDA error: an illegal memory access was encountered"},
}};

optimize::Standing standing(int recorded, std::optional<double> best, double elapsed) {
  optimize::Standing s;
  s.total = 20;
  s.best_speedup = best;
  s.cost_usd = 0.0213 * recorded + 0.0042;
  s.elapsed_s = elapsed;
  s.recorded = recorded;
  return s;
}

optimize::Attempt attempt(const Row& r) {
  optimize::Attempt a;
  a.number = r.number;
  a.generator = "llm:claude-sonnet-4";
  a.path = fmt::format("runs/swish/attempts/{:03}.py", r.number);
  a.verdict = r.verdict;
  a.correct = a.verdict == "correct";
  if (r.speedup > 0) {
    a.speedup = r.speedup;
    a.runtime_us = kEagerUs / r.speedup;
  }
  a.error = r.error;
  a.cost_usd = 0.0213;
  a.params = {{"intent", r.intent}};
  a.description = r.description;
  a.wall_s = 4.2 + r.number % 5;
  if (a.verdict != "generation_failed") {
    a.evaluation_id = 100 + r.number;
    json flags = json::array();
    std::stringstream fs(r.flags);
    for (std::string f; std::getline(fs, f, ',');) flags.push_back(f);
    a.summary = {
        {"flags", flags}, {"ref_runtime_us", kEagerUs}, {"compile_runtime_us", kCompileUs}};
  }
  if (r.number == 12)
    a.diagnosis = {{"bottleneck", "memory"},
                   {"evidence",
                    {"achieved 3.46 TB/s of 4.80 TB/s measured (72% of the copy bandwidth)",
                     "72% of speed of light"}},
                   {"suggestions",
                    {{{"action", "vectorise loads (128-bit) and keep accesses coalesced"}},
                     {{"action", "fewer, larger programs: 4 tiles per program"}}}}};
  if (r.number == 13)
    a.diagnosis = {{"bottleneck", "correctness"},
                   {"evidence", {"verdict runtime_error", r.error}},
                   {"suggestions", {{{"action", "mask the tail: offs < n on every load"}}}}};
  return a;
}

constexpr std::string_view kStream =
    "I'll keep the persistent grid from #12 and vectorise the loads: each program handles four "
    "contiguous BLOCK tiles through 128-bit aligned pointers (tl.multiple_of), and the sigmoid "
    "stays in fp32.\n\n```python\n@triton.jit\ndef swish_kernel(x_ptr, out_ptr, n, BLOCK: "
    "tl.constexpr):\n    pid = tl.program_id(0)\n    for t in range(4):\n";

std::string source(int number) {
  const int block = number < 2 ? 256 : number < 6 ? 1024 : number < 8 ? 2048 : 4096;
  const int warps = number < 6 ? 4 : number == 11 ? 16 : 8;
  std::string s =
      "import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
      "def swish_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n";
  if (number >= 12)
    s += "    for pid in range(tl.program_id(0), tl.cdiv(n, BLOCK), tl.num_programs(0)):\n"
         "        offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
         "        mask = offs < n\n"
         "        x = tl.load(x_ptr + offs, mask=mask, eviction_policy=\"evict_first\")\n"
         "        y = x * tl.sigmoid(x)  # swish\n"
         "        tl.store(out_ptr + offs, y, mask=mask)\n";
  else
    s += fmt::format(
        "    pid = tl.program_id(0)\n"
        "    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
        "    mask = offs < n\n"
        "    x = tl.load(x_ptr + offs, mask=mask{})\n"
        "    y = x * tl.sigmoid(x)  # swish\n"
        "    tl.store(out_ptr + offs, y, mask=mask)\n",
        number >= 8 ? ", eviction_policy=\"evict_first\"" : "");
  s += fmt::format(
      "\n\nclass ModelNew(torch.nn.Module):\n"
      "    def forward(self, x):\n"
      "        out = torch.empty_like(x)\n"
      "        n = x.numel()\n"
      "        grid = ({},)\n"
      "        swish_kernel[grid](x, out, n, BLOCK={}, num_warps={})\n"
      "        return out\n",
      number >= 12 ? "132 * 4" : fmt::format("triton.cdiv(n, {})", block), block, warps);
  if (number == 13) {  // the unmasked tail
    s.erase(s.find("        mask = offs < n\n"), 24);
    for (size_t p; (p = s.find(", mask=mask")) != std::string::npos;) s.erase(p, 11);
  }
  return s;
}

json evaluation(int number) {
  const Row* r = nullptr;
  for (const auto& x : kRows)
    if (x.number == number) r = &x;
  if (!r || r->speedup <= 0) return {{"verdict", r ? r->verdict : "?"}, {"roofline", nullptr}};
  const double n = 8388608, rt = kEagerUs / r->speedup, bytes = 8 * n, bw = 4.8e12;
  return {{"verdict", "correct"},
          {"runtime_us", {{"median", rt}}},
          {"roofline",
           {{"flops", 4 * n},
            {"bytes", bytes},
            {"floor_us", bytes / bw * 1e6},
            {"bandwidth_bytes_per_s", bw},
            {"peak_flops", 67e12},
            {"fraction_of_speed_of_light", bytes / bw * 1e6 / rt}}},
          {"profile",
           {{"kernel_table",
             {{{"name", "swish_kernel_0d1d2de"},
               {"launches", 1},
               {"us", rt - 0.6},
               {"share", (rt - 0.6) / rt}},
              {{"name", "elementwise_kernel<empty_like>"},
               {"launches", 1},
               {"us", 0.6},
               {"share", 0.6 / rt}}}}}}};
}

}  // namespace

void feed_session(optimize::Observer& m) {
  m.started(standing(0, std::nullopt, 0),
            {"swish-20261204-1", "swish_chain", "triton", "claude-sonnet-4", "NVIDIA H200",
             "swish_chain on triton with claude-sonnet-4"});
  m.strategy(standing(0, std::nullopt, 0.4),
             "engine search, strategy s0-mem for elementwise problems, 2 in flight");
  std::optional<double> best;
  double t = 1;
  int recorded = 0;
  for (const auto& r : kRows) {
    m.generating(standing(recorded, best, t), r.number, r.intent);
    m.model_text(r.number, fmt::format("Trying: {}.", r.intent));
    if (r.number == 5) m.model_retry(r.number, "HTTP 529 overloaded");
    if (r.number == 5) m.model_text(r.number, "Approximate the sigmoid with a fast exp.");
    t += 20;
    if (std::string_view(r.verdict) != "generation_failed")
      m.evaluating(standing(recorded, best, t), r.number, r.description);
    t += 30;
    if (r.speedup > 0 && (!best || r.speedup > *best)) best = r.speedup;
    ++recorded;
    m.attempt_finished(standing(recorded, best, t), attempt(r));
    if (r.number == 8)
      m.search_decision(standing(recorded, best, t), 4, "intent_succeeded",
                        "cache hints on streams: 2.31x");
  }
  m.search_decision(standing(recorded, best, t), 6, "intent_added",
                    "vectorise loads over four tiles per program");
  m.warning("the strategy population was not saved: database is locked");
  m.generating(standing(recorded, best, t), 14, "vectorise loads over four tiles per program");
  m.model_text(14, kStream.substr(0, 120));
  m.model_text(14, kStream.substr(120));
  m.generating(standing(recorded, best, t), 15, "more warps per program");
  m.evaluating(standing(recorded, best, t + 5), 15, "BLOCK=4096 num_warps=32");
}

Snapshot session_snapshot() {
  RunModel m;
  feed_session(m);
  Snapshot s = m.snapshot();
  s.elapsed_s = 754;
  return s;
}

Details session_details() {
  Details d;
  d.source = [](const AttemptView& a) -> std::optional<std::string> {
    if (a.verdict == "generation_failed") return std::nullopt;
    return source(a.number);
  };
  d.evaluation = [](int64_t id) -> std::optional<json> {
    return evaluation(static_cast<int>(id - 100));
  };
  return d;
}

void expect_golden(const std::string& name, const std::string& text) {
  const std::filesystem::path p =
      std::filesystem::path(OPENKERNEL_TEST_SOURCE_ROOT) / "tests/cpp/data/tui" / (name + ".txt");
  const char* update = std::getenv("OK_UPDATE_GOLDEN");
  if (update && std::string_view(update) == "1") {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text << '\n';
    return;
  }
  std::ifstream in(p, std::ios::binary);
  ASSERT_TRUE(in) << p << " is missing: run the test with OK_UPDATE_GOLDEN=1 to write it";
  std::stringstream buf;
  buf << in.rdbuf();
  std::string want = buf.str();
  if (!want.empty() && want.back() == '\n') want.pop_back();
  if (want == text) return;
  std::stringstream a(want), b(text);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ga = static_cast<bool>(std::getline(a, la)),
               gb = static_cast<bool>(std::getline(b, lb));
    if (!ga && !gb) break;
    if (la != lb || ga != gb) {
      ADD_FAILURE() << name << ": line " << line << " differs (OK_UPDATE_GOLDEN=1 rewrites)\n"
                    << "expected: " << la << "\n     got: " << lb << "\nwhole screen:\n"
                    << text;
      return;
    }
  }
}

std::string render_text(const Snapshot& s, UiState ui, int w, int h, bool ascii) {
  Canvas c(w, h, ascii);
  render(s, ui, session_details(), c);
  return c.text();
}

}  // namespace ok::tui::testing
