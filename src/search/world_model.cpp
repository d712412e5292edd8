// The Planner (world_model.hpp): its policies' choice of the next direction (prior, best-of-n,
// engine, with the scoring helpers) and its serialisation. What it learns from an observation
// (observe, observe_engine, stagnate) is in world_model_observe.cpp.
#include "search/world_model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "search/world_model_text.hpp"
#include "util/enum_names.hpp"

namespace ok::search {

using nlohmann::json;

namespace {

// The prior's say in the score: the first value of an axis in the skill's list scores this much
// more than the last.
constexpr double kPriorWeight = 0.06;
// What the critic's bottleneck adds to an axis that addresses it (times diagnosis_weight).
constexpr double kDiagnosisBoost = 0.04;
// What continuing (or reversing) an axis's last improving direction adds (subtracts).
constexpr double kTrendBonus = 0.05;

}  // namespace

json Intent::to_json() const {
  return {{"id", id},
          {"parent", parent < 0 ? json(nullptr) : json(parent)},
          {"title", title},
          {"rationale", rationale},
          {"source", source},
          {"status", status},
          {"note", note},
          {"priority", priority},
          {"confidence", confidence},
          {"attempts", attempts},
          {"cost_usd", cost_usd},
          {"evidence", evidence},
          {"action", action}};
}

constexpr util::EnumName<Policy> kPolicyNames[] = {
    {Policy::kEngine, "engine"}, {Policy::kBestOfN, "best-of-n"}, {Policy::kPrior, "prior"}};

std::optional<Policy> parse_policy(const std::string& s) {
  return util::value_of(kPolicyNames, s);
}

std::string policy_name(Policy p) {
  return util::name_of(kPolicyNames, p, "engine");
}

Planner::Planner(Policy policy, SearchParams params, TemplateSpace space, uint64_t seed,
                 std::string problem)
    : policy_(policy),
      params_(params),
      space_(std::move(space)),
      rng_(seed ^ 0x5EA2C4ull),
      problem_(std::move(problem)) {
  axis_stats_.resize(space_.axes().size());
  trend_.assign(space_.axes().size(), 0);
  Intent root;
  root.title = problem_.empty() ? "make the reference faster" : "make " + problem_ + " faster";
  root.rationale = "the search's root: every hypothesis below refines it";
  root.source = "root";
  root.status = "trying";
  root.priority = 1;
  add(std::move(root));
}

Intent& Planner::add(Intent i) {
  i.id = static_cast<int>(intents_.size());
  intents_.push_back(std::move(i));
  Intent& added = intents_.back();
  if (added.id > 0) decide("intent_added", added.id, added.title);
  return intents_.back();
}

void Planner::seed(const std::vector<SeedIntent>& seeds) {
  for (const auto& s : seeds) {
    Intent i;
    i.parent = 0;
    i.title = "apply the skill " + s.title;
    i.rationale = fmt::format("retrieved from the skill library: rank {}, confidence {:.2f}",
                              s.rank + 1, s.confidence);
    i.source = "skill";
    i.confidence = s.confidence;
    i.action = {{"skill", s.skill}};
    if (space_.empty()) {
      i.action["suggestion"] = s.technique.empty() ? s.title : s.technique;
      i.rationale += ": " + i.action["suggestion"].get<std::string>();
      i.priority = 0.1;  // an unrated suggestion's expected gain, as the critic's default
    } else if (s.point && *s.point < space_.size()) {
      i.action["point"] = *s.point;
    } else {
      i.status = "pruned";
      i.setback = Setback::kPruned;
      i.note = "it names no template point of this problem";
    }
    add(std::move(i));
  }
}

void Planner::settle_skill(const std::string& skill, const std::string& outcome) {
  for (auto& i : intents_)
    if (i.source == "skill" && i.action.value("skill", std::string()) == skill) {
      i.action["outcome"] = outcome;
      i.note += (i.note.empty() ? "skill " : "; skill ") + outcome;
    }
}

Intent* Planner::open_seed() {
  const std::set<size_t> ex = excluded();
  for (auto& i : intents_)
    if (i.source == "skill" && i.status == "open" && i.action.contains("point") &&
        !ex.count(i.action["point"].get<size_t>()))
      return &i;
  return nullptr;
}

void Planner::decide(std::string kind, int intent, std::string text) {
  decisions_.push_back({std::move(kind), intent, std::move(text)});
}

std::vector<Decision> Planner::take_decisions() {
  std::vector<Decision> out;
  out.swap(decisions_);
  return out;
}

std::set<size_t> Planner::excluded() const {
  std::set<size_t> out = tried_;
  out.insert(bad_.begin(), bad_.end());
  return out;
}

std::optional<Direction> Planner::next() {
  std::optional<Direction> d;
  switch (policy_) {
    case Policy::kEngine:
      d = space_.empty() ? next_engine_model() : next_engine();
      break;
    case Policy::kBestOfN:
      d = next_best_of_n();
      break;
    case Policy::kPrior:
      d = next_prior();
      break;
  }
  if (!d) {
    decide("exhausted", -1, "nothing left to try");
    return std::nullopt;
  }
  d->sequence = ++issued_;
  if (d->point) tried_.insert(*d->point);
  if (d->intent >= 0) {
    Intent& i = intents_[static_cast<size_t>(d->intent)];
    i.status = "trying";
    decide(
        "intent_chosen", i.id,
        fmt::format("{} (priority {:.3f}, confidence {:.2f})", i.title, i.priority, i.confidence));
  }
  return d;
}

std::optional<Direction> Planner::next_prior() {
  Direction d;
  if (space_.empty()) return d;  // a model: the plain retry loop
  for (size_t i = 0; i < space_.size(); ++i)
    if (!tried_.count(i)) {
      d.point = i;
      d.title = "the proposer's next point" + space_.describe(i);
      return d;
    }
  return std::nullopt;
}

std::optional<Direction> Planner::next_best_of_n() {
  Direction d;
  d.fresh = true;
  if (space_.empty()) return d;  // a model: a fresh sample without history
  std::vector<double> w;
  std::vector<size_t> ids;
  for (size_t i = 0; i < space_.size(); ++i)
    if (!tried_.count(i)) {
      ids.push_back(i);
      w.push_back(1.0 / (1.0 + static_cast<double>(i)));
    }
  if (ids.empty()) return std::nullopt;
  std::discrete_distribution<size_t> pick(w.begin(), w.end());
  d.point = ids[pick(rng_)];
  d.title = "a sample from the proposal distribution" + space_.describe(*d.point);
  return d;
}

std::optional<size_t> Planner::pure_move(size_t a, const json& v) const {
  const size_t from = best_point_.value_or(0);
  for (size_t q = 0; q < space_.size(); ++q)
    if (space_.value(q, a) == v && space_.distance(from, q) == 1 && !tried_.count(q) &&
        !bad_.count(q))
      return q;
  return std::nullopt;
}

std::optional<size_t> Planner::near_move(size_t a, const json& v) const {
  const size_t from = best_point_.value_or(0);
  auto q = space_.neighbour(from, a, v, excluded());
  if (q && space_.distance(from, *q) <= 2) return q;
  return std::nullopt;
}

double Planner::axis_score(size_t a, const json& v) const {
  const Axis& ax = space_.axes()[a];
  const auto& st = axis_stats_[a];
  // What changing this axis has gained so far (shrunk toward zero while evidence is thin).
  double learnt = st.n > 0 ? st.gain / (st.n + 1.0) : 0.0;
  // The proposer's prior: the rank of the point that would test the hypothesis (the skills'
  // order of whole points, which knows how axes combine): the one-axis move, else the nearest
  // untried point with that value within two axes (what realise() evaluates; a value early on
  // its axis can sit only on points the proposer ranks low, measured on the H200's RMSNorm: a
  // reduction tile second on its axis, first met at point 22 of 39), else the value's rank.
  double prior = 0;
  std::optional<size_t> tester = pure_move(a, v);
  if (!tester) tester = near_move(a, v);
  if (tester) {
    prior =
        kPriorWeight * (1.0 - static_cast<double>(*tester) / static_cast<double>(space_.size()));
  } else {
    auto it = std::find(ax.values.begin(), ax.values.end(), v);
    double rank = static_cast<double>(it - ax.values.begin());
    prior = kPriorWeight * (1.0 - rank / static_cast<double>(ax.values.size()));
  }
  // Numeric axes: keep going the way the last improving move on this axis went.
  double trend = 0;
  if (best_point_ && v.is_number() && a < trend_.size() && trend_[a] != 0) {
    const json& cur = space_.value(*best_point_, a);
    if (cur.is_number()) {
      double step = v.get<double>() - cur.get<double>();
      trend = (step > 0) == (trend_[a] > 0) ? kTrendBonus : -kTrendBonus;
    }
  }
  // The critic's bottleneck re-ranks moves the prior finds plausible; it does not promote a
  // value the prior ranks last (a memory-bound diagnosis says "change the tiling", not which).
  double diag = !last_bottleneck_.empty() && ax.bottleneck == last_bottleneck_
                    ? kDiagnosisBoost * params_.diagnosis_weight * prior / kPriorWeight
                    : 0.0;
  double total_n = 0;
  for (const auto& s : axis_stats_) total_n += s.n;
  double bonus = params_.exploration * 0.1 * std::sqrt(std::log(total_n + 2.0) / (st.n + 1.0));
  return learnt + prior + trend + diag + bonus;
}

std::optional<size_t> Planner::prior_pair_move() const {
  if (!best_point_) return std::nullopt;
  for (size_t q = 0; q < space_.size(); ++q)
    if (!tried_.count(q) && !bad_.count(q) && space_.distance(*best_point_, q) == 2) return q;
  return std::nullopt;
}

double Planner::pair_score() const {
  auto q = prior_pair_move();
  if (!q) return 0;
  // The proposer's rank of the point; what its two axes have gained so far (shrunk like an
  // axis's); an exploration bonus of its own, since a two-axis move is a hypothesis of its own
  // ("these parameters go together").
  double prior =
      kPriorWeight * (1.0 - static_cast<double>(*q) / static_cast<double>(space_.size()));
  double learnt = pair_stats_.n > 0 ? pair_stats_.gain / (pair_stats_.n + 1.0) : 0.0;
  for (size_t a = 0; a < space_.axes().size(); ++a)
    if (space_.value(*q, a) != space_.value(*best_point_, a)) {
      const auto& st = axis_stats_[a];
      learnt += (st.n > 0 ? st.gain / (st.n + 1.0) : 0.0) / 2;
    }
  double total_n = pair_stats_.n;
  for (const auto& s : axis_stats_) total_n += s.n;
  double bonus =
      params_.exploration * 0.1 * std::sqrt(std::log(total_n + 2.0) / (pair_stats_.n + 1.0));
  return learnt + prior + bonus;
}

void Planner::add_pair_intent() {
  bool open = std::any_of(intents_.begin(), intents_.end(), [&](const Intent& i) {
    return i.parent == base_ && i.status == "open" && i.action.contains("pair");
  });
  if (open || !prior_pair_move()) return;
  Intent i;
  i.parent = base_;
  i.title = "the proposer's next point near the best: two parameters at once";
  i.rationale = "the skills' order of whole points knows which values go together";
  i.source = "template";
  i.action = {{"pair", true}};
  i.priority = pair_score();
  add(std::move(i));
}

void Planner::expand_base() {
  // The children of the base: one intent per axis value that differs from the incumbent's.
  const size_t from = best_point_.value_or(0);
  for (size_t a = 0; a < space_.axes().size(); ++a) {
    const Axis& ax = space_.axes()[a];
    for (const auto& v : ax.values) {
      if (v == space_.value(from, a)) continue;
      bool pruned = std::any_of(pruned_values_.begin(), pruned_values_.end(),
                                [&](const auto& p) { return p.first == a && p.second == v; });
      if (pruned) continue;
      Intent i;
      i.parent = base_;
      i.title = fmt::format("{}: {}={}", ax.title, ax.param, fmt_value(v));
      i.rationale = ax.bottleneck.empty()
                        ? "a template parameter of " + ax.skill
                        : fmt::format("addresses a {} bottleneck ({})", ax.bottleneck, ax.skill);
      i.source = "template";
      i.action = {{"axis", ax.key}, {"value", v}};
      i.priority = axis_score(a, v);
      add(std::move(i));
    }
  }
}

std::optional<Direction> Planner::realise(Intent& i) {
  Direction d;
  d.intent = i.id;
  d.title = i.title;
  d.rationale = i.rationale;
  if (space_.empty()) return d;
  const std::set<size_t> ex = excluded();
  std::optional<size_t> p;
  if (i.action.contains("point")) {
    p = i.action["point"].get<size_t>();
    if (ex.count(*p)) p.reset();
  } else if (i.action.contains("pair")) {
    p = prior_pair_move();
  } else if (i.action.contains("axis")) {
    // A hypothesis about one axis is tested by changing that axis alone, so the result can be
    // credited to it. Where that point was measured already, the evidence is in: no evaluation.
    auto a = space_.axis_index(i.action["axis"].get<std::string>());
    const size_t from = best_point_.value_or(0);
    if (a) {
      const json& v = i.action["value"];
      for (size_t q = 0; q < space_.size() && !p; ++q) {
        if (space_.value(q, *a) != v || space_.distance(from, q) != 1) continue;
        if (tried_.count(q)) {
          i.status = "failed";
          i.setback = Setback::kAlreadyMeasured;
          i.note = "already measured: no better than the best";
          decide("intent_failed", i.id, i.title + ": " + i.note);
          return std::nullopt;
        }
        if (!bad_.count(q)) p = q;
      }
      if (!p) p = near_move(*a, v);
    }
  }
  if (!p) return std::nullopt;
  d.point = p;
  i.action["point"] = *p;
  return d;
}

// The first hypothesis: the proposer's prior is right; a retrieved skill that names the first
// point is that hypothesis, so its outcome is the skill's.
std::optional<Direction> Planner::start_engine() {
  started_ = true;
  for (auto& s : intents_)
    if (s.source == "skill" && s.status == "open" && s.action.contains("point") &&
        s.action["point"] == 0) {
      base_ = s.id;
      return realise(s);
    }
  Intent i;
  i.parent = 0;
  i.title = "start from the proposer's best prior point" + space_.describe(0);
  i.rationale = "the skills' parameter lists put their best-known values first";
  i.source = "template";
  i.action = {{"point", 0}};
  i.priority = 1;
  i.confidence = 0.5;
  base_ = add(std::move(i)).id;
  return realise(intents_[static_cast<size_t>(base_)]);
}

std::optional<Direction> Planner::next_engine() {
  if (!started_) return start_engine();
  if (since_progress_ >= params_.stagnation_window) stagnate();
  if (pending_seed_) {
    Intent& seeded = intents_[static_cast<size_t>(*pending_seed_)];
    pending_seed_.reset();
    if (seeded.status == "open")
      if (auto d = realise(seeded)) return d;
  }
  bool expanded = false;
  while (true) {
    // One two-axis move along the prior competes with the one-axis hypotheses.
    if (expanded || std::any_of(intents_.begin(), intents_.end(),
                                [&](const Intent& i) { return i.parent == base_; }))
      add_pair_intent();
    // The open children of the base, best score first; refresh their priorities from what was
    // learnt since they were created.
    std::vector<Intent*> open;
    for (auto& i : intents_) {
      if (i.parent != base_ || i.status != "open") continue;
      if (i.action.contains("axis")) {
        auto a = space_.axis_index(i.action["axis"].get<std::string>());
        if (a) i.priority = axis_score(*a, i.action["value"]);
      } else if (i.action.contains("pair")) {
        i.priority = pair_score();
      }
      open.push_back(&i);
    }
    std::stable_sort(open.begin(), open.end(),
                     [](const Intent* x, const Intent* y) { return x->priority > y->priority; });
    for (Intent* i : open) {
      if (auto d = realise(*i)) return d;
      if (i->status != "open") continue;  // settled by earlier evidence
      i->status = "pruned";
      i->setback = Setback::kPruned;
      i->note = "no untried template point expresses it";
      decide("intent_pruned", i->id, i->title + ": " + i->note);
    }
    if (!expanded) {
      bool has_children = std::any_of(intents_.begin(), intents_.end(),
                                      [&](const Intent& i) { return i.parent == base_; });
      expanded = true;
      if (!has_children) {
        expand_base();
        continue;
      }
    }
    break;
  }
  // The neighbourhood of the best is exhausted: change direction, to a retrieved skill's point
  // first.
  if (Intent* seeded = open_seed())
    if (auto d = realise(*seeded)) return d;
  std::vector<size_t> from;
  if (best_point_) from.push_back(*best_point_);
  auto p = space_.jump(from, params_.jump_distance, excluded());
  if (!p) return std::nullopt;
  Intent i;
  i.parent = 0;
  i.title = "explore a distant region" + space_.describe(*p);
  i.rationale = "every neighbour of the best point was tried";
  i.source = "stagnation";
  i.action = {{"point", *p}};
  i.priority = 0;
  return realise(add(std::move(i)));
}

std::optional<Direction> Planner::next_engine_model() {
  if (!started_) {
    started_ = true;
    Intent i;
    i.parent = 0;
    i.title = "a first correct, fused kernel";
    i.rationale = "nothing is known yet; correctness first";
    i.source = "root";
    i.priority = 1;
    i.confidence = 0.5;
    base_ = add(std::move(i)).id;
    return realise(intents_[static_cast<size_t>(base_)]);
  }
  if (since_progress_ >= params_.stagnation_window) stagnate();
  Intent* best = nullptr;
  double best_score = 0;
  double total = 0;
  for (const auto& i : intents_) total += i.attempts;
  for (auto& i : intents_) {
    if (i.status != "open") continue;
    double s = i.priority * (0.5 + i.confidence) +
               params_.exploration * 0.1 * std::sqrt(std::log(total + 2.0) / (i.attempts + 1.0));
    // Refinements of the current best come first; older branches keep a chance.
    if (i.parent == base_) s += 0.05;
    if (!best || s > best_score) {
      best = &i;
      best_score = s;
    }
  }
  if (best) return realise(*best);
  // No hypothesis open: a free attempt, the generator's own choice, under the base.
  Intent i;
  i.parent = base_;
  i.title = "improve on the best kernel so far";
  i.rationale = "no open hypothesis; the generator chooses";
  i.source = "root";
  return realise(add(std::move(i)));
}

json Planner::to_json() const {
  json tree = json::array();
  for (const auto& i : intents_) tree.push_back(i.to_json());
  json axes = json::array();
  for (size_t a = 0; a < space_.axes().size(); ++a) {
    const Axis& ax = space_.axes()[a];
    axes.push_back({{"key", ax.key},
                    {"title", ax.title},
                    {"bottleneck", ax.bottleneck},
                    {"values", ax.values},
                    {"tries", axis_stats_[a].n},
                    {"log_gain", axis_stats_[a].gain}});
  }
  return {{"policy", policy_name(policy_)},
          {"params",
           {{"exploration", params_.exploration},
            {"stagnation_window", params_.stagnation_window},
            {"min_gain", params_.min_gain},
            {"jump_distance", params_.jump_distance},
            {"diagnosis_weight", params_.diagnosis_weight}}},
          {"issued", issued_},
          {"observed", observed_},
          {"base", base_},
          {"best_speedup", best_speedup_ ? json(*best_speedup_) : json(nullptr)},
          {"best_point", best_point_ ? json(*best_point_) : json(nullptr)},
          {"space_size", space_.size()},
          {"axes", axes},
          {"intents", tree}};
}

}  // namespace ok::search
