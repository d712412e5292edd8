// A synthetic session written through the Store API, as `openkernel optimize` would have
// written it: a problem, N attempts (candidates with a load_inline C++ source, evaluations whose
// result carries the roofline figures, params on three template axes, an intent each, a
// diagnosis), the intent tree, the strategy population with the session's outcome recorded, and
// the events; optionally a recorded profile on the correct attempts numbered 10, 20, ...
// Deterministic for a given seed. Used by the dashboard's C++ tests and by
// bench/dashboard_bench.mjs (through the dashboard_synth program) for the 500-attempt session.
#pragma once

#include <fmt/core.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "search/strategy.hpp"
#include "store/store.hpp"

namespace ok::bench {

struct SynthOptions {
  std::string session = "synthetic";
  int attempts = 500;
  std::string model = "builtin";
  double cost_per_attempt = 0;
  unsigned seed = 1;
  // A recorded deep profile (the evaluation result's `profile`, docs/profiling.md): given, it is
  // the profile of each correct attempt whose number is a multiple of 10 (a deep profile runs
  // only for correct candidates).
  nlohmann::json profile = nullptr;
};

inline std::string synth_source(int block, int warps, int stages) {
  return fmt::format(R"(import torch
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
// block {0}, warps {1}, stages {2}
torch::Tensor swish(torch::Tensor x) {{
  auto y = torch::empty_like(x);
  const float* in = x.data_ptr<float>();
  float* out = y.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); i += {0}) {{
    for (int64_t j = i; j < std::min<int64_t>(i + {0}, x.numel()); ++j)
      out[j] = in[j] / (1.0f + std::exp(-in[j]));
  }}
  return y;
}}
"""

mod = load_inline("swish_{0}_{1}_{2}", cpp_sources=CPP, functions=["swish"])


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return mod.swish(x)
)",
                     block, warps, stages);
}

// Writes the session; returns an error message ("" on success).
inline std::string synthesise(store::Store& st, const SynthOptions& o) {
  using nlohmann::json;
  std::mt19937 rng(o.seed);
  std::uniform_real_distribution<double> u(0, 1);
  const int blocks[] = {64, 128, 256, 512, 1024}, warps[] = {1, 2, 4, 8}, stages[] = {1, 2, 3};
  store::ProblemRow p{"synth-" + o.session, "synthetic swish", "/synthetic/swish.py", 1, 99,
                      "class Model: pass\n"};
  auto pid = st.upsert_problem(p);
  if (!pid) return pid.error().message;
  store::SessionRow s;
  s.id = o.session;
  s.problem_id = *pid;
  s.reference = p.path;
  s.name = p.name;
  s.backend = "cpu";
  s.model = o.model;
  s.mode = "fast";
  s.status = "running";
  if (auto r = st.insert_session(s); !r) return r.error().message;
  auto event = [&](const std::string& kind, int number, const std::string& text, json payload) {
    store::EventRow e;
    e.session = o.session;
    e.kind = kind;
    e.number = number;
    e.total = o.attempts;
    e.text = text;
    e.payload_json = payload.dump();
    return st.append_event(e);
  };
  (void)event("started", 0, "synthetic swish on cpu with " + o.model, json::object());
  json intents = json::array({{{"id", 0},
                               {"parent", nullptr},
                               {"title", "make swish faster"},
                               {"status", "trying"},
                               {"source", "root"},
                               {"priority", 1.0},
                               {"confidence", 0.3},
                               {"evidence", json::array()},
                               {"note", ""}}});
  std::optional<double> best;
  int best_number = 0;
  double cost = 0;
  for (int n = 1; n <= o.attempts; ++n) {
    int b = blocks[rng() % 5], w = warps[rng() % 4], g = stages[rng() % 3];
    bool correct = u(rng) > 0.15;
    double runtime = 200.0 * (1 + std::abs(std::log2(b / 256.0))) / std::sqrt(w) * (1 + 0.1 * g) *
                     (0.8 + 0.4 * u(rng));
    double speedup = 1000.0 / runtime;
    auto cid = st.upsert_candidate({fmt::format("synth-{}-{}", o.session, n), synth_source(b, w, g),
                                    fmt::format("attempt_{}.py", n)});
    if (!cid) return cid.error().message;
    store::EvaluationRow e;
    e.problem_id = *pid;
    e.candidate_id = *cid;
    e.session = o.session;
    e.verdict = correct ? "correct" : "incorrect";
    e.compiled = true;
    e.correct = e.valid = correct;
    if (correct) e.speedup = speedup;
    e.runtime_median_us = runtime;
    e.ref_runtime_median_us = 1000.0;
    e.backend = "cpu";
    e.device = "cpu";
    e.flags_json = correct ? "[]" : R"(["mismatch"])";
    json roofline = {{"bytes", 8388608},
                     {"flops", 5242880},
                     {"bandwidth_bytes_per_s", 5e9},
                     {"peak_flops", 5.12e11},
                     {"floor_us", 1677.7},
                     {"fraction_of_speed_of_light", 1677.7 / runtime / 10}};
    json result = {{"verdict", e.verdict}, {"roofline", roofline}};
    if (!o.profile.is_null() && correct && n % 10 == 0) result["profile"] = o.profile;
    e.result_json = result.dump();
    auto eid = st.insert_evaluation(e);
    if (!eid) return eid.error().message;
    std::string title = fmt::format("block={}, warps={}, stages={}", b, w, g);
    store::AttemptRow a;
    a.session = o.session;
    a.number = n;
    a.generator = o.model;
    a.candidate_id = *cid;
    a.evaluation_id = *eid;
    a.path = fmt::format("attempts/attempt_{}.py", n);
    a.verdict = e.verdict;
    a.correct = correct;
    if (correct) a.speedup = speedup;
    a.runtime_us = runtime;
    a.cost_usd = o.cost_per_attempt;
    cost += a.cost_usd;
    a.params_json = json{
        {"cpu-tiled", {{"block", b}, {"warps", w}, {"stages", g}}},
        {"intent", {{"id", n}, {"title", title}}},
        {"skill",
         "cpu-tiled"}}.dump();
    a.description = "tiled swish: " + title;
    a.diagnosis_json = json{{"bottleneck", u(rng) > 0.5 ? "memory" : "launch"}}.dump();
    a.wall_s = 1 + u(rng);
    if (auto r = st.insert_attempt(a); !r) return r.error().message;
    bool improved = correct && (!best || speedup > *best);
    if (improved) {
      best = speedup;
      best_number = n;
    }
    intents.push_back({{"id", n},
                       {"parent", n <= 3 ? 0 : 1 + static_cast<int>(rng() % (n - 1))},
                       {"title", title},
                       {"status", improved  ? "succeeded"
                                  : correct ? "failed"
                                            : "pruned"},
                       {"source", "template"},
                       {"priority", u(rng)},
                       {"confidence", u(rng)},
                       {"evidence", {n}},
                       {"note", improved ? "new best" : "no gain"}});
    (void)event("attempt_finished", n, e.verdict,
                {{"best_speedup", best ? json(*best) : json()}, {"cost_usd", cost}});
  }
  s.status = "finished";
  s.best_speedup = best;
  if (best) s.best_attempt = best_number;
  s.cost_usd = cost;
  if (auto r = st.update_session(s); !r) return r.error().message;
  json axes = json::array({{{"key", "cpu-tiled.block"}, {"values", blocks}},
                           {{"key", "cpu-tiled.warps"}, {"values", warps}},
                           {{"key", "cpu-tiled.stages"}, {"values", stages}}});
  json tree = {{"policy", "engine"},
               {"problem_class", "pointwise"},
               {"strategy", {{"id", "seed-balanced"}}},
               {"axes", axes},
               {"intents", intents}};
  if (auto r = st.put_search_state(o.session, "intents", tree.dump()); !r) return r.error().message;
  auto pop = search::Population::seeded();
  search::Outcome out{
      "synthetic swish", "pointwise", best.has_value(),       best.value_or(0), cost,
      o.attempts,        best_number, {"no_gain", "mismatch"}};
  pop.record("seed-balanced", out);
  if (auto r = st.put_search_state("global", "strategies", pop.to_json().dump()); !r)
    return r.error().message;
  (void)event("stopped", 0, "iterations", json::object());
  return "";
}

}  // namespace ok::bench
