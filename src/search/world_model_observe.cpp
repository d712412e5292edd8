// The Planner's learning half (world_model.hpp): what an observation of a direction teaches the
// intent tree (observe; the engine policy's rules in observe_engine) and the stagnation response
// (stagnate). The choosing half is world_model.cpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "search/world_model.hpp"
#include "search/world_model_text.hpp"

namespace ok::search {

using nlohmann::json;

namespace {

// A wrong answer teaches as much as a large slowdown: it counts as this log gain for its axis.
constexpr double kIncorrectGain = -0.5;
// A model's intent is retried at most this often before it counts as failed.
constexpr int kModelTries = 1;

}  // namespace

void Planner::stagnate() {
  since_progress_ = 0;
  decide("stagnation", base_,
         fmt::format("no progress of {:.0f}% in {} evaluations: changing direction",
                     100 * params_.min_gain, params_.stagnation_window));
  if (!space_.empty()) {
    // Prune the base's axes that lost every time; jump to a distant untried region.
    for (auto& i : intents_) {
      if (i.parent != base_ || i.status != "open" || !i.action.contains("axis")) continue;
      auto a = space_.axis_index(i.action["axis"].get<std::string>());
      if (!a || axis_stats_[*a].n < 2 || axis_stats_[*a].gain >= 0) continue;
      i.status = "pruned";
      i.setback = Setback::kPruned;
      i.note = fmt::format("pruned: changing {} lost in {} of its tries", space_.axes()[*a].param,
                           axis_stats_[*a].n);
      decide("intent_pruned", i.id, i.title + ": " + i.note);
    }
    // A retrieved skill's untried point is a better-founded change of direction than a random
    // distant region.
    if (Intent* seeded = open_seed()) {
      pending_seed_ = seeded->id;
      return;
    }
    std::vector<size_t> from;
    if (best_point_) from.push_back(*best_point_);
    if (auto p = space_.jump(from, params_.jump_distance, excluded())) {
      Intent i;
      i.parent = base_;
      i.title = "change of direction: a distant region" + space_.describe(*p);
      i.rationale = fmt::format("{} evaluations without progress near the best point",
                                params_.stagnation_window);
      i.source = "stagnation";
      i.action = {{"point", *p}};
      i.priority = 1;  // tried next
      add(std::move(i));
    }
    return;
  }
  // A model: prune the base's weakest open hypotheses and ask for a different approach.
  std::vector<std::string> tried;
  for (auto& i : intents_) {
    if (i.parent == base_ && (i.status == "failed")) tried.push_back(i.title);
    if (i.status == "open" && i.priority < params_.min_gain) {
      i.status = "pruned";
      i.setback = Setback::kPruned;
      i.note = "pruned on stagnation: expected gain below the progress threshold";
      decide("intent_pruned", i.id, i.title);
    }
  }
  Intent i;
  i.parent = base_;
  i.title = "a fundamentally different approach (another decomposition, tiling or algorithm)";
  i.rationale = tried.empty()
                    ? "recent attempts made no progress"
                    : "these made no progress: " + fmt::format("{}", fmt::join(tried, "; "));
  i.source = "stagnation";
  i.priority = 1;
  i.confidence = 0.3;
  add(std::move(i));
}

void Planner::observe(const Direction& d, const Observation& o) {
  ++observed_;
  if (!o.bottleneck.empty() && o.bottleneck != "correctness") last_bottleneck_ = o.bottleneck;
  if (policy_ == Policy::kEngine) {
    observe_engine(d, o);
  } else if (o.correct && o.speedup && (!best_speedup_ || *o.speedup > *best_speedup_)) {
    best_speedup_ = o.speedup;
    best_point_ = o.point;
  }
  credit_seeds(d, o);
}

void Planner::credit_seeds(const Direction& d, const Observation& o) {
  if (!o.point) return;
  for (auto& i : intents_) {
    if (i.source != "skill" || i.id == d.intent || (i.status != "open" && i.status != "trying") ||
        !i.action.contains("point") || i.action["point"] != *o.point)
      continue;
    i.attempts += 1;
    i.evidence.push_back(o.attempt);
    const bool best = o.correct && o.speedup && best_speedup_ && *o.speedup >= *best_speedup_;
    i.status = best ? "succeeded" : "failed";
    i.setback = best ? Setback::kNone : !o.correct ? Setback::kIncorrect : Setback::kNoGain;
    i.note = !o.correct  ? (o.verdict.empty() ? "incorrect" : o.verdict)
             : best      ? fmt::format("its point is the best so far: {:.3f}x", *o.speedup)
             : o.speedup ? fmt::format("no gain: x{:.3f} of the best", *o.speedup / *best_speedup_)
                         : "no gain";
    decide(best ? "intent_succeeded" : "intent_failed", i.id, i.title + ": " + i.note);
  }
}

void Planner::observe_engine(const Direction& d, const Observation& o) {
  Intent* it = d.intent >= 0 && static_cast<size_t>(d.intent) < intents_.size()
                   ? &intents_[static_cast<size_t>(d.intent)]
                   : nullptr;
  const std::optional<size_t> before = best_point_;
  const std::optional<double> best_before = best_speedup_;
  // Which axis the attempt changed, when exactly one.
  std::optional<size_t> axis;
  if (o.point && before && !space_.empty() && space_.distance(*o.point, *before) == 1)
    for (size_t a = 0; a < space_.axes().size(); ++a)
      if (space_.value(*o.point, a) != space_.value(*before, a)) axis = a;
  double log_gain = kIncorrectGain;
  if (o.correct && o.speedup && *o.speedup > 0)
    log_gain = best_before ? std::log(*o.speedup / *best_before) : 0.0;
  if (o.point && before && !space_.empty()) {
    // Credit every changed axis (a share each), so multi-axis moves still teach.
    int dist = space_.distance(*o.point, *before);
    for (size_t a = 0; a < space_.axes().size() && dist > 0; ++a)
      if (space_.value(*o.point, a) != space_.value(*before, a)) {
        axis_stats_[a].n += 1;
        axis_stats_[a].gain += log_gain / dist;
      }
  }
  const bool progress = o.correct && o.speedup &&
                        (!best_before || *o.speedup > *best_before * (1.0 + params_.min_gain));
  if (o.correct && o.speedup && (!best_before || *o.speedup > *best_before)) {
    // Remember which way each changed numeric axis moved to get here.
    if (o.point && before)
      for (size_t a = 0; a < space_.axes().size(); ++a) {
        const json &u = space_.value(*before, a), &v = space_.value(*o.point, a);
        if (u != v && u.is_number() && v.is_number())
          trend_[a] = v.get<double>() > u.get<double>() ? 1 : -1;
      }
    best_speedup_ = o.speedup;
    best_point_ = o.point;
  }
  since_progress_ = progress ? 0 : since_progress_ + 1;
  if (it && it->action.contains("pair")) {
    pair_stats_.n += 1;
    pair_stats_.gain += log_gain;
  }
  if (it) {
    it->attempts += 1;
    it->cost_usd += o.cost_usd;
    it->evidence.push_back(o.attempt);
    if (progress) {
      it->status = "succeeded";
      it->confidence = std::min(1.0, it->confidence + 0.3);
      it->note = best_before ? fmt::format("x{:.3f} over the best", *o.speedup / *best_before)
                             : fmt::format("first correct: {:.3f}x", *o.speedup);
      decide("intent_succeeded", it->id, it->title + ": " + it->note);
      base_ = it->id;  // its children refine the new best
    } else {
      it->status = "failed";
      it->confidence = std::max(0.0, it->confidence - 0.2);
      it->setback = !o.evaluated ? Setback::kGenerationFailed
                    : !o.correct ? Setback::kIncorrect
                                 : Setback::kNoGain;
      if (!o.evaluated)
        it->note = "generation failed";
      else if (!o.correct)
        it->note = o.verdict.empty() ? "incorrect" : o.verdict;
      else if (best_before && o.speedup)
        it->note = fmt::format("no gain: x{:.3f} of the best", *o.speedup / *best_before);
      else
        it->note = "no gain";
      decide("intent_failed", it->id, it->title + ": " + it->note);
      if (space_.empty() && o.evaluated && !o.correct && it->attempts < kModelTries + 1 &&
          it->source != "root") {
        // A model's hypothesis that failed on correctness gets one more try (the critic's
        // diagnosis of the error goes with it).
        it->status = "open";
        it->note += "; retry with the critic's diagnosis";
      }
    }
    // A wrong answer condemns the value a one-axis move set: no point with it is tried again.
    // From a two-axis move, it condemns the values of the two that no correct point has had
    // (a value seen correct elsewhere is not the likely culprit); where both are new, both go,
    // the price of not spending an evaluation to tell them apart. Farther jumps condemn nothing.
    if (o.evaluated && !o.correct && o.point && before && o.verdict != "timeout" &&
        space_.distance(*o.point, *before) <= 2) {
      for (size_t a = 0; a < space_.axes().size(); ++a) {
        const json v = space_.value(*o.point, a);
        if (v == space_.value(*before, a) || (!axis && seen_correct_.count({a, v.dump()})))
          continue;
        pruned_values_.emplace_back(a, v);
        for (size_t p = 0; p < space_.size(); ++p)
          if (space_.value(p, a) == v) bad_.insert(p);
        for (auto& i : intents_)
          if (i.status == "open" && i.action.contains("axis") &&
              i.action["axis"] == space_.axes()[a].key && i.action["value"] == v) {
            i.status = "pruned";
            i.setback = Setback::kPruned;
            i.note = "pruned: " + space_.axes()[a].param + "=" + fmt_value(v) + " gave " +
                     (o.verdict.empty() ? "wrong results" : o.verdict);
            decide("intent_pruned", i.id, i.title + ": " + i.note);
          }
      }
    }
  }
  if (o.correct && o.point && !space_.empty())
    for (size_t a = 0; a < space_.axes().size(); ++a)
      seen_correct_.insert({a, space_.value(*o.point, a).dump()});
  // The critic's suggestions become hypotheses under the base (a model realises them; the
  // builtin proposer cannot, so there they only steer axis priorities through the bottleneck).
  if (space_.empty() && o.suggestions.is_array()) {
    for (const auto& s : o.suggestions) {
      if (!s.is_object() || !s.contains("action") || !s["action"].is_string()) continue;
      std::string title = s["action"].get<std::string>();
      bool known = std::any_of(intents_.begin(), intents_.end(), [&](const Intent& i) {
        return i.title == title && i.status != "failed";
      });
      if (known || title.empty()) continue;
      Intent i;
      i.parent = base_;
      i.title = title;
      i.rationale = s.value("rationale", std::string());
      i.source = "critic";
      i.action = {{"suggestion", title}};
      double g = s.contains("expected_gain") && s["expected_gain"].is_number()
                     ? s["expected_gain"].get<double>()
                     : 0.1;
      i.priority = std::clamp(g, 0.0, 10.0);
      i.confidence = 0.3;
      add(std::move(i));
    }
  }
}

}  // namespace ok::search
