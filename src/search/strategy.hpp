// The outer loop of the search: an evolving population of search strategies (GEPA-style).
//
// A Strategy is a recipe for how the middle loop (the intent-tree world model,
// search/world_model.hpp) and the generator search one problem: the planner's knobs (UCB
// exploration, stagnation window, progress threshold, jump distance, how much the critic's
// bottleneck steers priorities) and a guidance text for the LLM generator's system prompt.
//
// The Population is evaluated across problems: after each problem the orchestrator records the
// Outcome under the strategy that searched it, per problem class ("pointwise", "row:softmax", ...).
// Each strategy is scored on three objectives per class and across classes: the geometric mean
// speedup (an incorrect problem counts 1.0, the fallback to PyTorch, as KernelBench does), the
// correctness rate and the mean cost per problem. The Pareto frontier over (geomean speedup,
// correctness rate, cost) is what survives: choose() tries every strategy once per class, then
// takes the class's best frontier member, or with a small probability any frontier member.
// mutate() is reflective: it reads a strategy's failure traces (verdicts and diagnoses such as
// "mismatch", "compile_error", "stagnation", "no_gain") and derives a child whose knobs move in the
// direction the traces suggest, with a one-line lesson appended to its guidance; without a clear
// signal it perturbs one knob at random. prune() keeps the population bounded without losing a
// frontier member.
//
// The caller persists the population as JSON in the store (to_json/from_json, which validates).
// Deterministic given the recorded outcomes and the caller's rng; nothing here reads a clock or
// std::random_device. Not thread-safe. Pointers and references returned into the population stay
// valid until the next mutate(), prune() or assignment.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "search/world_model.hpp"
#include "util/error.hpp"

namespace ok::search {

struct Strategy {
  std::string id;        // "seed-balanced"; mutants "m<N>-<seed id>" (unique within a population)
  std::string parent;    // id of the strategy it was mutated from; "" for seeds
  std::string guidance;  // appended to the LLM generator's system prompt (may be ""), < 600 chars
  double exploration = 0.7;   // UCB exploration constant for intent selection, [0, 3]
  int stagnation_window = 3;  // evaluations without progress before a change of direction, [2, 12]
  double min_gain = 0.02;     // relative speedup gain that counts as progress, [0.005, 0.2]
  int jump_distance = 2;      // axes changed at once by a change of direction, [1, 4]
  double diagnosis_weight = 1.0;  // how strongly the critic's bottleneck steers priorities, [0, 3]
  std::string mutation;  // one line: what the reflective mutation changed and why ("" for seeds)

  nlohmann::json to_json() const;
  // Validates types and ranges; `id` is required, missing knobs take the defaults above.
  // kBadInput with a message naming the field.
  static util::Result<Strategy> from_json(const nlohmann::json& j);
};

// The planner's knobs of a strategy.
SearchParams search_params(const Strategy& s);

// What one problem's search under a strategy gave (the orchestrator reports it after each problem).
struct Outcome {
  std::string problem;        // problem name
  std::string problem_class;  // "pointwise", "row:softmax", "vendor+pointwise"; "" = "other"
  bool correct = false;       // a correct candidate was found
  double speedup = 0;         // best speedup vs eager (only meaningful when correct)
  double cost_usd = 0;
  int evaluations = 0;
  int evaluations_to_best = 0;
  // One entry per evaluated attempt that was not an improvement: verdicts or diagnoses such as
  // "mismatch", "compile_error", "stagnation", "no_gain" (free text is matched by keyword).
  std::vector<std::string> failures;
};

struct Objectives {
  double geomean_speedup = 0;  // incorrect problems count 1.0; 0 when no problem was recorded
  double correctness_rate = 0;
  double cost_usd = 0;  // mean per problem
  int problems = 0;
};

class Population {
 public:
  Population();  // the seeds: a population is never empty
  // Four diverse seeds: balanced, exploit, explore and profile-led, each with a short guidance.
  static Population seeded();

  // Objectives of strategy `id` on `problem_class` ("" = across all classes). Unknown id or
  // nothing recorded: all zero.
  Objectives objectives(const std::string& id, const std::string& problem_class = "") const;
  // Non-dominated strategies (maximise geomean and correctness, minimise cost) among those with
  // at least one recorded problem of the class ("" = all classes); strategies equal on all three
  // are all kept. Sorted by geomean descending, then id.
  std::vector<const Strategy*> frontier(const std::string& problem_class = "") const;
  // The strategy for a problem of `problem_class` ("" = "other"): the first strategy in
  // population order never tried on the class; otherwise, with probability `explore`, a uniform
  // member of the all-classes frontier, else the class frontier member with the best geomean.
  // Deterministic given the rng state; never fails.
  const Strategy& choose(const std::string& problem_class, std::mt19937_64& rng,
                         double explore = 0.2) const;
  // Adds an outcome to `id`'s record for the outcome's class. Unknown id: ignored, false.
  bool record(const std::string& id, const Outcome& o);
  // Reflective mutation: reads the failure traces and aggregates of `id`'s outcomes on
  // `problem_class` ("" = all classes) and adds a child (parent = id, fresh id) whose knobs move
  // the way the traces suggest, clamped to their ranges, with `mutation` saying what and why and a
  // lesson appended to its guidance (oldest lessons dropped to stay under 600 chars):
  //   mostly stagnation / no gain     -> more exploration, longer jumps, shorter window;
  //   mostly mismatch / compile error -> less exploration, more diagnosis weight, shorter jumps;
  //   best found late in the budget   -> shorter stagnation window;
  //   costly with no gain             -> higher progress threshold (and less exploration unless
  //                                      stagnating).
  // No signal (or every move blocked by a range): one knob perturbed at random, no lesson.
  // An unknown id mutates the first strategy. Returns the child (valid until the next
  // mutate/prune).
  const Strategy& mutate(const std::string& id, const std::string& problem_class,
                         std::mt19937_64& rng);
  // Bounds the population to `max_size` where it can: removes tried strategies on no class's
  // frontier (mutants before seeds), then untried mutants, oldest first. Never removes a frontier
  // member of any class (or of all classes) nor an untried seed, so it may stay above max_size.
  void prune(size_t max_size = 12);

  const std::vector<Strategy>& strategies() const { return strategies_; }
  const Strategy* find(const std::string& id) const;

  // {"version": 1, "next_mutant": N, "strategies": [strategy + {"records": {class: record}}]};
  // a record aggregates the outcomes and keeps the last 20 failure strings.
  nlohmann::json to_json() const;
  // Validates everything (types, ranges, unique ids, a non-empty population); bad -> kBadInput.
  static util::Result<Population> from_json(const nlohmann::json& j);

 private:
  // The aggregate of one strategy's outcomes on one problem class.
  struct Record {
    int problems = 0;
    int correct = 0;
    double log_speedup_sum = 0;   // sum of log(speedup), incorrect problems counting 1.0
    double cost_usd = 0;          // total
    int evaluations = 0;          // total
    int evaluations_to_best = 0;  // total over correct problems
    int late_best = 0;  // correct problems whose best came in the last third of the evaluations
    int no_gain = 0;    // problems without a speedup above 1 + min_gain (incorrect included)
    std::vector<std::string> failures;  // the last kMaxFailures

    nlohmann::json to_json() const;
    static util::Result<Record> from_json(const nlohmann::json& j, const std::string& where);
  };
  static constexpr size_t kMaxFailures = 20;

  Record aggregate(const std::string& id, const std::string& problem_class) const;
  bool tried(const std::string& id, const std::string& problem_class) const;

  std::vector<Strategy> strategies_;                              // creation order
  std::map<std::string, std::map<std::string, Record>> records_;  // id -> class -> record
  int next_mutant_ = 1;
};

}  // namespace ok::search
