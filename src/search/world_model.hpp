// The middle loop of the search: a per-problem world model, a tree of optimisation intents.
//
// An intent is a hypothesis about the problem ("vectorise loads and stores: vec=4", "fuse the
// bias into the epilogue"). Each has a status (open, trying, succeeded, failed, pruned), a
// priority (the expected relative gain over the best so far), a confidence, the attempts and cost
// spent on it and evidence links to the attempts that tested it. A succeeded intent becomes the
// base that its children refine, so the tree is the search's trajectory with its reasons.
//
// The Planner decides: it creates intents (from the builtin template space, seen as named axes,
// and from the critic's structured suggestions, whoever the critic is), picks the next one by
// expected gain plus an exploration bonus (UCB over what it has learnt per axis or per intent),
// detects stagnation (no progress in a window of evaluations) and then changes direction (a jump
// to a distant, untried region or a "different approach" intent) and prunes what stopped paying.
// Every decision is kept for the observer (take_decisions()).
//
// Three policies share the interface, so benchmarks compare them at equal evaluations:
//   engine     the world model above;
//   best-of-n  independent samples from the proposal distribution (for builtin: template points
//              drawn without replacement with weight 1/(1 + prior rank); for a model: a fresh
//              prompt without history), the baseline the literature says search often fails to
//              beat;
//   prior      the proposer's own order (builtin: best prior first; a model: the plain retry loop).
//
// Seeded intents: the skills retrieved for the session (docs/skills.md) enter the tree at its start
// as intents under the root (source "skill", action {"skill": id, "point" | "suggestion"}, the
// skill's confidence). The engine starts from a seeded intent that names its first point, turns
// to the open seeded points (rank order) before a distant jump when it stagnates or exhausts the
// best's neighbourhood, and a model's seeded techniques compete with the critic's suggestions.
// Any policy credits a seeded intent with the evaluation of the point it names; the session's end
// records the skill's resolved outcome on it (settle_skill).
//
// Deterministic given the seed and the observations, so a resumed session rebuilds the same
// planner by replaying its recorded attempts (replay order: docs/search.md). Not thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "search/space.hpp"
#include "util/error.hpp"

namespace ok::search {

// Why an intent failed or was pruned, set with each of those statuses (kNone otherwise): the
// orchestrator's lessons for the strategy population read it instead of the note's wording.
enum class Setback { kNone, kGenerationFailed, kIncorrect, kNoGain, kAlreadyMeasured, kPruned };

struct Intent {
  int id = 0;
  int parent = -1;  // -1 for the root
  std::string title, rationale;
  std::string source;           // root, template, critic, stagnation
  std::string status = "open";  // open, trying, succeeded, failed, pruned
  std::string note;             // why the status (a verdict, "no gain: x0.97", "pruned: ...")
  double priority = 0;          // expected relative gain over the best so far
  double confidence = 0.3;      // 0..1
  // Why the status, typed, when failed or pruned (not serialised).
  Setback setback = Setback::kNone;
  int attempts = 0;
  double cost_usd = 0;
  std::vector<int> evidence;  // attempt numbers that tested it
  // builtin: {"axis": key, "value": v} or {"point": i}; critic: {"suggestion": text}.
  nlohmann::json action = nlohmann::json::object();

  nlohmann::json to_json() const;
};

// The search knobs a strategy sets (search/strategy.hpp holds the population that evolves them).
struct SearchParams {
  double exploration = 0.7;
  int stagnation_window = 3;
  double min_gain = 0.02;
  int jump_distance = 2;
  double diagnosis_weight = 1.0;
};

enum class Policy { kEngine, kBestOfN, kPrior };
std::optional<Policy> parse_policy(const std::string& s);
std::string policy_name(Policy p);

// What the orchestrator asks the generator for.
struct Direction {
  int sequence = 0;  // 1, 2, ... in issue order
  int intent = -1;   // the intent tested; -1 for none
  std::string title, rationale;
  std::optional<size_t> point;  // builtin: the template point to render
  bool fresh = false;           // a model: sample without history (best-of-n)
};

// What an evaluated (or failed) attempt taught.
struct Observation {
  int attempt = 0;
  bool evaluated = false;  // false: the generation failed before evaluation
  bool correct = false;
  std::optional<double> speedup;
  std::string verdict;
  std::string bottleneck;                // the critic's, "" when none
  nlohmann::json suggestions = nullptr;  // the critic's [{action, expected_gain, rationale}]
  std::optional<size_t> point;           // builtin: the template point evaluated
  double cost_usd = 0;
};

// A decision, for the observer: intent_added, intent_chosen, intent_succeeded, intent_failed,
// intent_pruned, stagnation, exhausted.
struct Decision {
  std::string kind;
  int intent = -1;
  std::string text;
};

// A skill retrieved for the session, as the world model sees it.
struct SeedIntent {
  std::string skill;  // the skill's id
  std::string title;  // the skill's title
  double confidence = 0.5;
  int rank = 0;
  std::optional<size_t> point;  // builtin: the template point it names here (none: not here)
  std::string technique;        // a model skill: what to do ("" for builtin)
};

class Planner {
 public:
  // `space` empty: the proposer is a model (intents come from the critic's suggestions).
  Planner(Policy policy, SearchParams params, TemplateSpace space, uint64_t seed,
          std::string problem = "");

  // The next direction; nullopt when nothing is left (every template point tried).
  std::optional<Direction> next();
  // Adds the seeded intents (before the first next(); in rank order). A builtin skill that names
  // no point of this space is shown, settled as pruned.
  void seed(const std::vector<SeedIntent>& seeds);
  // Records skill `skill`'s resolved outcome (helped, failed, neutral) on its seeded intent.
  void settle_skill(const std::string& skill, const std::string& outcome);
  // Applies what the attempt for direction `d` gave.
  void observe(const Direction& d, const Observation& o);
  // Decisions since the last call.
  std::vector<Decision> take_decisions();

  Policy policy() const { return policy_; }
  const TemplateSpace& space() const { return space_; }
  const std::vector<Intent>& intents() const { return intents_; }
  int issued() const { return issued_; }
  int observed() const { return observed_; }
  std::optional<double> best_speedup() const { return best_speedup_; }
  // The tree and the planner's state as JSON (docs/search.md): the store keeps it after every
  // evaluation and `openkernel intents` prints it.
  nlohmann::json to_json() const;

 private:
  Intent& add(Intent i);
  void decide(std::string kind, int intent, std::string text);
  std::optional<Direction> next_engine();
  std::optional<Direction> start_engine();  // the engine's first direction
  std::optional<Direction> next_engine_model();
  std::optional<Direction> next_best_of_n();
  std::optional<Direction> next_prior();
  std::optional<Direction> realise(Intent& i);
  void expand_base();
  void stagnate();
  double axis_score(size_t a, const nlohmann::json& v) const;
  // The best-prior untried point that changes only axis `a` of the best point, to `v`.
  std::optional<size_t> pure_move(size_t a, const nlohmann::json& v) const;
  // Where no one-axis point has value v on axis a (the shapes rule it out): the nearest
  // untried one with it, at most two axes from the best point; what realise() evaluates then.
  std::optional<size_t> near_move(size_t a, const nlohmann::json& v) const;
  // The best-prior untried point that changes exactly two axes of the best point, its score,
  // and the base's one open intent that tries it.
  std::optional<size_t> prior_pair_move() const;
  double pair_score() const;
  void add_pair_intent();
  std::set<size_t> excluded() const;
  void observe_engine(const Direction& d, const Observation& o);
  // The first open seeded intent (rank order) whose point is still untried, if any.
  Intent* open_seed();
  // Credits the seeded intents naming the point `o` evaluated, when another direction tested it.
  void credit_seeds(const Direction& d, const Observation& o);

  Policy policy_;
  SearchParams params_;
  TemplateSpace space_;
  std::mt19937_64 rng_;
  std::string problem_;
  std::vector<Intent> intents_;
  std::vector<Decision> decisions_;
  int issued_ = 0, observed_ = 0;
  bool started_ = false;              // the first hypothesis was made
  std::optional<int> pending_seed_;   // a seeded intent stagnation turned to
  std::set<size_t> tried_;            // template points issued
  std::set<size_t> bad_;              // points with a pruned value
  std::optional<size_t> best_point_;  // the incumbent
  std::optional<double> best_speedup_;
  int base_ = 0;            // the intent whose children are being tried
  int since_progress_ = 0;  // evaluations without progress
  std::string last_bottleneck_;
  struct AxisStats {
    int n = 0;
    double gain = 0;  // sum of log gains
  };
  std::vector<AxisStats> axis_stats_;
  AxisStats pair_stats_;    // the two-axis moves along the prior
  std::vector<int> trend_;  // per axis: +1 / -1 the last improving move's direction, 0 none
  std::vector<std::pair<size_t, nlohmann::json>> pruned_values_;
  std::set<std::pair<size_t, std::string>> seen_correct_;  // (axis, value dump) of correct points
};

}  // namespace ok::search
