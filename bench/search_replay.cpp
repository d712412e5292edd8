// search_replay: the search policies against measured landscapes, at equal evaluations.
//
//   search_replay --db BENCH.db [--db MORE.db ...] --budgets 2,3,4 --seeds 50 [--json OUT.json]
//                 [--trace] SESSION...
//
// (Each session is read from the first database that has it: landscapes measured in several runs
// are replayed together.)
// Each SESSION is an exhaustive `openkernel optimize --search prior` run (every template point of
// one problem evaluated once, for real, by the evaluator); together they are the landscape. For
// each budget N and seed, each policy (engine, best-of-n, prior) searches every problem with N
// evaluations, each evaluation answered by the point's recorded result (verdict, speedup and the
// critic's diagnosis), so the policies are compared on identical measurements and the timing
// noise of re-measuring cannot decide the comparison. The engine runs all three levels: its
// strategy comes from the population (chosen per problem class, recorded, mutated after each
// problem), its planner is the one `openkernel optimize` uses.
//
// Prints, per budget and policy: the geomean over problems and seeds of the best speedup found
// (an incorrect problem counts 1.0, KernelBench's fallback), the correctness rate (problems with a
// correct kernel found), the mean evaluations to reach the best, and the mean fraction of each
// problem's landscape optimum reached (0 where nothing correct was found). --trace also prints,
// for seed 1 and the largest budget, every step of each policy on each problem (what it chose and
// what that point measured), to see why a policy wins or loses. Exit 0, 2 on bad input.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "replay.hpp"
#include "search/strategy.hpp"
#include "search/world_model.hpp"
#include "store/store.hpp"
#include "util/strings.hpp"

namespace {

using nlohmann::json;
using ok::bench::Landscape;
using ok::bench::Run;
using ok::bench::search_one;
namespace search = ok::search;

int usage(const std::string& why) {
  fmt::print(stderr,
             "search_replay: {}\nusage: search_replay --db BENCH.db [--db MORE.db ...] [--budgets "
             "2,3,4] [--seeds 50] [--json OUT.json] [--trace] SESSION...\n",
             why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> dbs;
  std::string json_out;
  std::vector<int> budgets = {2, 3, 4};
  int seeds = 50;
  bool trace = false;
  std::vector<std::string> sessions;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--db") {
      dbs.push_back(value());
    } else if (a == "--budgets") {
      budgets.clear();
      for (const auto& b : ok::util::split(value(), ',')) budgets.push_back(std::stoi(b));
    } else if (a == "--seeds") {
      seeds = std::stoi(value());
    } else if (a == "--trace") {
      trace = true;
    } else if (a == "--json") {
      json_out = value();
    } else if (a.rfind("--", 0) == 0) {
      return usage("unknown flag " + a);
    } else {
      sessions.push_back(a);
    }
  }
  if (dbs.empty() || sessions.empty() || budgets.empty() || seeds < 1)
    return usage("--db and at least one session are needed");
  auto loaded = ok::bench::load_landscapes(dbs, sessions);
  if (!loaded) return usage(loaded.error().message);
  std::vector<Landscape> ls = std::move(*loaded);
  json out = {
      {"db", dbs}, {"seeds", seeds}, {"problems", json::array()}, {"results", json::array()}};
  fmt::print("{} problems:\n", ls.size());
  for (const auto& l : ls) {
    fmt::print("  {:<28} {:<22} {:>3} points, optimum {:.3f}x\n", l.problem, l.problem_class,
               l.points.size(), l.optimum);
    out["problems"].push_back({{"problem", l.problem},
                               {"session", l.session},
                               {"class", l.problem_class},
                               {"points", l.points.size()},
                               {"optimum", l.optimum}});
  }
  fmt::print("\n{:>6}  {:<10} {:>9} {:>9} {:>10} {:>12}\n", "evals", "policy", "geomean", "correct",
             "to best", "of optimum");
  for (int budget : budgets) {
    for (auto policy :
         {search::Policy::kEngine, search::Policy::kBestOfN, search::Policy::kPrior}) {
      double log_sum = 0, log_opt = 0, to_best = 0;  // log_opt: sum of fractions
      int n = 0, correct = 0, n_best = 0, n_opt = 0;
      for (int seed = 1; seed <= seeds; ++seed) {
        // The outer loop: one population per seed, learning across the problems in a seeded
        // order.
        auto pop = search::Population::seeded();
        std::mt19937_64 rng(static_cast<uint64_t>(seed) * 7919u);
        std::vector<size_t> order(ls.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::shuffle(order.begin(), order.end(), rng);
        for (size_t k : order) {
          const Landscape& l = ls[k];
          search::SearchParams params;
          const search::Strategy* chosen = nullptr;
          if (policy == search::Policy::kEngine) {
            chosen = &pop.choose(l.problem_class, rng);
            params = search::search_params(*chosen);
          }
          std::vector<std::string> failures;
          const bool show = trace && seed == 1 && budget == budgets.back();
          if (show)
            fmt::print("  trace: {} on {} (seed 1, {} evaluations)\n", search::policy_name(policy),
                       l.problem, budget);
          Run r = search_one(l, policy, params, static_cast<uint64_t>(seed) * 1000003u + k, budget,
                             &failures, show);
          if (chosen) {
            search::Outcome o;
            o.problem = l.problem;
            o.problem_class = l.problem_class;
            o.correct = r.correct;
            o.speedup = r.best;
            o.evaluations = budget;
            o.evaluations_to_best = r.to_best;
            o.failures = failures;
            std::string id = chosen->id;
            pop.record(id, o);
            pop.mutate(id, l.problem_class, rng);
            pop.prune();
          }
          ++n;
          log_sum += std::log(r.correct ? r.best : 1.0);
          if (r.correct) {
            ++correct;
            to_best += r.to_best;
            ++n_best;
          }
          if (l.optimum > 0) {
            log_opt += (r.correct ? r.best : 0.0) / l.optimum;
            ++n_opt;
          }
        }
      }
      double geo = std::exp(log_sum / n);
      double rate = static_cast<double>(correct) / n;
      double tb = n_best ? to_best / n_best : 0;
      double of_opt = n_opt ? log_opt / n_opt : 0;
      fmt::print("{:>6}  {:<10} {:>9.4f} {:>8.1f}% {:>10.2f} {:>11.1f}%\n", budget,
                 search::policy_name(policy), geo, 100 * rate, tb, 100 * of_opt);
      out["results"].push_back({{"evaluations", budget},
                                {"policy", search::policy_name(policy)},
                                {"geomean_speedup", geo},
                                {"correctness_rate", rate},
                                {"evaluations_to_best", tb},
                                {"fraction_of_optimum", of_opt}});
    }
  }
  if (!json_out.empty()) {
    std::FILE* f = std::fopen(json_out.c_str(), "w");
    if (!f) return usage("cannot write " + json_out);
    fmt::print(f, "{}\n", out.dump(2));
    std::fclose(f);
  }
  return 0;
}
