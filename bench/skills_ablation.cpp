// skills_ablation: the skill library's effect on the search, replayed over measured landscapes.
//
//   skills_ablation --db BENCH.db [--db MORE.db ...] --held-out S1,S2,... [--budgets 2,3,4,6]
//                   [--seeds 50] [--json OUT.json] [--common-reference] [--near F] SESSION...
//
// --near F: also the evaluations to a point within F (e.g. 0.05) of the optimum, for landscapes
// whose top is a plateau of points within the timing noise of each other.
// --common-reference: each session's speedups against one reference time, the median of those
// its evaluations measured (bench/replay.hpp), for landscapes recorded on a loaded CPU host.
//
// The sessions not held out are the learning part: each is learnt as a finished session that
// measured its whole landscape (skills::learn into a fresh store with the seed skills, the code a
// real session runs at its end). On each held-out problem the library is then retrieved for the
// problem's signature (skills::retrieve with its template points, as optimize does) and reorders
// its template points (skills::prior_order, the builtin generator's prior); the policies engine
// and prior search it with N evaluations, each answered by the point's recorded result
// (bench/replay.hpp), with the proposer's order ("without") and with the library's ("with").
//
// Prints per budget, policy and arm: the geomean over held-out problems and seeds of the best
// speedup found (incorrect counts 1.0), the mean evaluations to reach that best, and the fraction
// of each landscape's optimum reached; then, per policy and arm, the mean evaluations to reach the
// landscape's optimum with an unlimited budget, and which skill each held-out problem was fed.
// The signatures are those the sessions recorded (search_state SESSION "signature": ops, shape
// regime, dtypes, architecture); a landscape recorded before sessions kept it has only its
// pattern, backend and device (regime unknown, -1). Exit 0, 2 on bad input.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "replay.hpp"
#include "skills/learn.hpp"
#include "skills/library.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"

namespace {

using nlohmann::json;
using ok::bench::Landscape;
namespace search = ok::search;
namespace sk = ok::skills;

int usage(const std::string& why) {
  fmt::print(stderr,
             "skills_ablation: {}\nusage: skills_ablation --db BENCH.db [--db MORE.db ...] "
             "--held-out S1,S2 [--budgets 2,3,4,6] [--seeds 50] [--json OUT.json] "
             "[--common-reference] [--near F] SESSION...\n",
             why);
  return 2;
}

sk::Signature signature(const Landscape& l) {
  // As the session recorded it (ops, shape regime, dtypes, architecture), else what the
  // landscape knows.
  if (l.signature.is_object())
    if (auto recorded = sk::Signature::from_json(l.signature)) return *recorded;
  sk::Signature s;
  s.pattern = l.problem_class;
  s.backend = l.backend;
  s.arch = l.backend == "cpu" ? "cpu" : l.device;
  return s;
}

// A finished session that measured the whole landscape.
sk::SessionLesson lesson_of(const Landscape& l) {
  sk::SessionLesson s;
  s.session = l.session;
  s.problem = l.problem;
  s.hardware = l.device;
  s.builtin = true;
  s.signature = signature(l);
  for (size_t i = 0; i < l.points.size(); ++i) {
    const auto& a = l.points[i];
    s.attempts.push_back({.number = static_cast<int>(i) + 1,
                          .correct = a.correct,
                          .speedup = a.speedup,
                          .params = l.params[i],
                          .description = a.description});
  }
  return s;
}

// Evaluations until a point of at least `fraction` of the landscape's optimum is measured (the
// whole space as the budget).
int to_optimum(const Landscape& l, search::Policy policy, uint64_t seed,
               const std::vector<search::SeedIntent>& seeds, double fraction) {
  search::Planner planner(policy, {}, l.space, seed, l.problem);
  planner.seed(seeds);
  for (int n = 1; n <= static_cast<int>(l.points.size()); ++n) {
    auto d = planner.next();
    if (!d || !d->point) break;
    ok::optimize::Attempt a = l.points[*d->point];
    a.number = n;
    auto o = ok::optimize::observation_of(a, l.space);
    o.point = d->point;
    planner.observe(*d, o);
    if (a.correct && a.speedup && *a.speedup >= fraction * l.optimum) return n;
  }
  return static_cast<int>(l.points.size());
}

struct Arm {
  std::string name;
  std::vector<Landscape> problems;
  std::vector<std::vector<search::SeedIntent>> seeds;  // per problem: the skills fed
};

}  // namespace

// Longer than a function should be: the benchmark's steps (flags, learning, retrieval, the table,
// evaluations to the optimum) in the order they run, as search_replay's main is.
int main(int argc, char** argv) {
  std::vector<std::string> dbs, sessions;
  std::set<std::string> held_out;
  std::vector<int> budgets = {2, 3, 4, 6};
  int seeds = 50;
  std::string json_out;
  bool common_reference = false;
  double near = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--db") {
      dbs.push_back(value());
    } else if (a == "--held-out") {
      for (const auto& s : ok::util::split(value(), ',')) held_out.insert(s);
    } else if (a == "--budgets") {
      budgets.clear();
      for (const auto& b : ok::util::split(value(), ',')) budgets.push_back(std::atoi(b.c_str()));
    } else if (a == "--seeds") {
      seeds = std::atoi(value().c_str());
    } else if (a == "--json") {
      json_out = value();
    } else if (a == "--common-reference") {
      common_reference = true;
    } else if (a == "--near") {
      near = std::atof(value().c_str());
    } else if (a.rfind("--", 0) == 0) {
      return usage("unknown flag " + a);
    } else {
      sessions.push_back(a);
    }
  }
  if (near < 0 || near >= 1) return usage("--near takes a fraction in [0, 1)");
  if (dbs.empty() || sessions.empty() || held_out.empty() || budgets.empty() || seeds < 1)
    return usage("--db, --held-out and sessions are needed");
  auto loaded = ok::bench::load_landscapes(dbs, sessions, common_reference);
  if (!loaded) return usage(loaded.error().message);

  // Learn on the learning part, in a store of its own.
  char tmpl[] = "/tmp/skills_ablation-XXXXXX";
  if (!mkdtemp(tmpl)) return usage("cannot make a temporary folder");
  const std::filesystem::path dir = tmpl;
  int status = 0;
  {
    auto lib_store = ok::store::Store::open(dir / "library.db");
    if (!lib_store) return usage(lib_store.error().message);
    if (auto s = sk::ensure_seeds(*lib_store, ok::util::resource_root() / "data/skills"); !s)
      return usage(s.error().message);
    json out = {
        {"learning", json::array()}, {"held_out", json::array()}, {"results", json::array()}};
    fmt::print("learning part:\n");
    for (const auto& l : *loaded) {
      if (held_out.count(l.session)) continue;
      auto r = sk::learn(*lib_store, lesson_of(l));
      if (!r) return usage(r.error().message);
      fmt::print("  {:<36} {:<16} {:>3} points -> {}\n", l.problem, l.problem_class,
                 l.points.size(), r->learned ? r->learned->title : "(nothing correct)");
      out["learning"].push_back(l.session);
    }
    auto library = sk::load(*lib_store);
    if (!library) return usage(library.error().message);
    Arm without{"without", {}}, with{"with", {}};
    fmt::print("held-out part:\n");
    for (const auto& l : *loaded) {
      if (!held_out.count(l.session)) continue;
      auto ranked = sk::retrieve(*library, signature(l), {.query = l.problem, .points = l.params});
      auto order = sk::prior_order(l.params, ranked);
      without.problems.push_back(l);
      without.seeds.emplace_back();
      with.problems.push_back(ok::bench::reordered(l, order));
      with.seeds.push_back(sk::seed_intents(ranked, with.problems.back().params));
      std::string fed = "(no learnt skill applies)";
      for (const auto& r : ranked)
        if (r.skill.provenance == "learned") {
          fed = r.skill.title;
          break;
        }
      // Where the optimum sits in the proposer's order and in the library's.
      size_t opt = 0;
      for (size_t i = 0; i < l.points.size(); ++i)
        if (l.points[i].correct && l.points[i].speedup && *l.points[i].speedup >= l.optimum)
          opt = i;
      const size_t opt_with = std::find(order.begin(), order.end(), opt) - order.begin();
      fmt::print(
          "  {:<36} {:<16} {:>3} points, optimum {:.3f}x at {} -> {}; first point {} -> {}; fed: "
          "{}\n",
          l.problem, l.problem_class, l.points.size(), l.optimum, opt, opt_with, order.front(),
          l.points[order.front()].speedup ? fmt::format("{:.3f}x", *l.points[order.front()].speedup)
                                          : l.points[order.front()].verdict,
          fed);
      out["held_out"].push_back(
          {{"session", l.session}, {"fed", fed}, {"first_point", order.front()}});
    }
    if (without.problems.empty()) return usage("no held-out session among the sessions");
    fmt::print("\n{:>6}  {:<8} {:<8} {:>9} {:>10} {:>12}\n", "evals", "policy", "library",
               "geomean", "to best", "of optimum");
    for (int budget : budgets)
      for (auto policy : {search::Policy::kEngine, search::Policy::kPrior})
        for (const Arm* arm : {&without, &with}) {
          double log_sum = 0, to_best = 0, of_opt = 0;
          int n = 0, n_best = 0, n_opt = 0;
          for (int seed = 1; seed <= seeds; ++seed)
            for (size_t k = 0; k < arm->problems.size(); ++k) {
              const Landscape& l = arm->problems[k];
              auto r = ok::bench::search_one(l, policy, {}, seed * 1000003u + k, budget, nullptr,
                                             false, arm->seeds[k]);
              ++n;
              log_sum += std::log(r.correct ? r.best : 1.0);
              if (r.correct) {
                to_best += r.to_best;
                ++n_best;
              }
              if (l.optimum > 0) {
                of_opt += (r.correct ? r.best : 0.0) / l.optimum;
                ++n_opt;
              }
            }
          const double geo = std::exp(log_sum / n), tb = n_best ? to_best / n_best : 0,
                       fo = n_opt ? of_opt / n_opt : 0;
          fmt::print("{:>6}  {:<8} {:<8} {:>9.4f} {:>10.2f} {:>11.1f}%\n", budget,
                     search::policy_name(policy), arm->name, geo, tb, 100 * fo);
          out["results"].push_back({{"evaluations", budget},
                                    {"policy", search::policy_name(policy)},
                                    {"library", arm->name},
                                    {"geomean_speedup", geo},
                                    {"evaluations_to_best", tb},
                                    {"fraction_of_optimum", fo}});
        }
    std::vector<double> fractions = {1.0};
    if (near > 0) fractions.push_back(1.0 - near);
    for (double fraction : fractions) {
      const std::string key =
          fraction == 1.0 ? "to_optimum" : fmt::format("to_within_{:g}", 1.0 - fraction);
      fmt::print("\nevaluations to {} (whole space as the budget):\n",
                 fraction == 1.0
                     ? std::string("the landscape's optimum")
                     : fmt::format("within {:g}% of the optimum", 100 * (1 - fraction)));
      for (auto policy : {search::Policy::kEngine, search::Policy::kPrior})
        for (const Arm* arm : {&without, &with}) {
          double sum = 0;
          int n = 0;
          for (int seed = 1; seed <= seeds; ++seed)
            for (size_t k = 0; k < arm->problems.size(); ++k)
              if (arm->problems[k].optimum > 0) {
                sum += to_optimum(arm->problems[k], policy, seed * 1000003u + k, arm->seeds[k],
                                  fraction);
                ++n;
              }
          fmt::print("  {:<8} {:<8} {:.2f}\n", search::policy_name(policy), arm->name,
                     n ? sum / n : 0);
          out[key][search::policy_name(policy)][arm->name] = n ? sum / n : 0;
        }
    }
    if (!json_out.empty() && !ok::util::write_file(json_out, out.dump(2) + "\n"))
      status = usage("cannot write " + json_out);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return status;
}
