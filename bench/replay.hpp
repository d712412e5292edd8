// The measured landscapes the search benchmarks replay (search_replay, skills_ablation): each
// an exhaustive `openkernel optimize --search prior` session (every template point of one problem
// evaluated once, for real), read from the first of several stores that has it, and one search
// over it with every evaluation answered by the point's recorded result. Plain values; no threads.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "optimize/session.hpp"
#include "search/world_model.hpp"
#include "store/store.hpp"
#include "util/error.hpp"

namespace ok::bench {

struct Landscape {
  std::string session, problem, problem_class;
  std::string backend, device;  // the session's backend; the device its evaluations ran on
  search::TemplateSpace space;
  std::vector<nlohmann::json> params;     // the template points, by point index
  std::vector<optimize::Attempt> points;  // their measured attempts, by point index
  double optimum = 0;                     // best measured speedup (0: none correct)
  nlohmann::json signature;  // the problem's skill signature as the session recorded it, or null
};

struct Run {
  bool correct = false;
  double best = 0;
  int to_best = 0;
};

// Each session from the first of the stores `dbs` that has it; kBadInput naming what is missing
// or unreadable. `common_reference`: each correct point's speedup is recomputed against one
// reference time per session, the median of the reference times its evaluations measured
// (speedup x runtime), so the reference's own timing noise (on a loaded CPU host, a reference of
// 100 ms is time-sliced where a 1 ms candidate is not: measured 45-200 ms within one session)
// does not reorder the points; the candidates' runtimes decide.
util::Result<std::vector<Landscape>> load_landscapes(const std::vector<std::string>& dbs,
                                                     const std::vector<std::string>& sessions,
                                                     bool common_reference = false);

// The same landscape with its points in `order` (indices into l's points, a permutation).
Landscape reordered(const Landscape& l, const std::vector<size_t>& order);

// One search of one problem with `budget` evaluations; `failures` (may be null) receives the
// failed and pruned intents' notes; `trace` prints every step; `seeds`: the world model's seeded
// intents (the skills fed, skills::seed_intents).
Run search_one(const Landscape& l, search::Policy policy, const search::SearchParams& params,
               uint64_t seed, int budget, std::vector<std::string>* failures, bool trace = false,
               const std::vector<search::SeedIntent>& seeds = {});

}  // namespace ok::bench
