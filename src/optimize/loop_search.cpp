// The orchestrator's search: the planner's set-up and replay on resume, the stop rules, the
// checkpoints, and the strategy population's lesson after a session (loop.hpp).
#include <fmt/core.h>

#include <random>

#include "optimize/loop.hpp"
#include "util/paths.hpp"

namespace ok::optimize {

using nlohmann::json;
using util::ErrorKind;
using util::fail;

std::string failure_entry(const Failure& f) {
  switch (f.reason) {
    case FailureReason::kNoGain:
      return "no_gain";
    case FailureReason::kStagnation:
      return "stagnation";
    case FailureReason::kIntentNote:
      return f.note;
  }
  return f.note;
}

std::optional<Failure> failure_of(const search::Intent& intent) {
  if (intent.status != "failed" && intent.status != "pruned") return std::nullopt;
  if (intent.setback == search::Setback::kNoGain) return Failure{FailureReason::kNoGain, ""};
  return Failure{FailureReason::kIntentNote, intent.note};
}

namespace {

// The problem class strategies are chosen by: the builtin proposer's pattern, else "other".
std::string problem_class(const std::vector<json>& points) {
  if (!points.empty() && points.front().is_object())
    return points.front().value("pattern", std::string("other"));
  return "other";
}

}  // namespace

// The planner for this session: a new one under the population's choice of strategy, or the
// recorded one rebuilt by replaying the recorded attempts.
util::Result<void> Loop::prepare_search() {
  auto policy = search::parse_policy(options_.search);
  if (!policy)
    return fail(ErrorKind::kUsage,
                "unknown search " + options_.search + " (engine, best-of-n, prior)");
  auto points = deps_.generator->space(problem_);
  if (auto r = choose_skills(points); !r) return r;
  search::TemplateSpace space(points);
  problem_class_ = problem_class(points);
  auto pop = load_population();
  if (!pop) return std::unexpected(pop.error());
  population_ = std::move(*pop);
  if (auto r = choose_strategy(); !r) return r;
  problem_.guidance = strategy_.guidance;
  planner_.emplace(*policy, search::search_params(strategy_), std::move(space), options_.seed,
                   problem_.name);
  if (auto r = seed_intents(points); !r) return r;
  replay_attempts();
  return {};
}

// The strategy: the one this session recorded, else the one asked for, else the population's
// choice for the problem class.
util::Result<void> Loop::choose_strategy() {
  auto saved = deps_.store->search_state(session_id_, "intents");
  if (!saved) return std::unexpected(saved.error());
  json earlier = *saved ? json::parse(**saved, nullptr, false) : json();
  std::mt19937_64 rng(options_.seed ^ 0x57A7E6ull);
  if (earlier.is_object() && earlier.contains("strategy")) {
    auto s = search::Strategy::from_json(earlier["strategy"]);
    if (!s) return std::unexpected(s.error());
    strategy_ = *s;
  } else if (!options_.strategy.empty()) {
    const search::Strategy* s = population_.find(options_.strategy);
    if (!s) return fail(ErrorKind::kUsage, "no strategy " + options_.strategy + " in the store");
    strategy_ = *s;
  } else {
    strategy_ = population_.choose(problem_class_, rng);
  }
  return {};
}

// Replays the recorded attempts into the planner under the live issue rule, so the same
// directions come out; those issued but never recorded are generated again first.
void Loop::replay_attempts() {
  std::deque<search::Direction> issued;
  for (const auto& a : outcome_.attempts) {
    while (may_issue()) {
      auto d = planner_->next();
      if (!d) break;
      issued.push_back(*d);
    }
    search::Direction d;
    if (!issued.empty() && issued.front().sequence == a.number) {
      d = issued.front();
      issued.pop_front();
    }
    planner_->observe(d, observation_of(a, planner_->space()));
  }
  replayed_directions_.assign(issued.begin(), issued.end());
  (void)planner_->take_decisions();  // replayed decisions were shown the first time
  if (!outcome_.attempts.empty())
    observer_.search_decision(standing(), -1, "replayed",
                              fmt::format("{} recorded attempts into the intent tree ({} intents)",
                                          outcome_.attempts.size(), planner_->intents().size()));
}

util::Result<search::Population> Loop::load_population(std::vector<std::string>* deferred) {
  auto text = deps_.store->search_state("global", "strategies");
  if (!text) return std::unexpected(text.error());
  if (!*text) return search::Population::seeded();
  json j = json::parse(**text, nullptr, false);
  auto pop = search::Population::from_json(j);
  if (!pop) {
    std::string why = "the stored strategy population is unreadable (" + pop.error().message +
                      "); starting from the seeds";
    if (deferred)
      deferred->push_back(std::move(why));
    else
      observer_.warning(why);
    return search::Population::seeded();
  }
  return pop;
}

// The outer loop learns from a finished session: its outcome is recorded against the strategy,
// which then mutates reflectively from the failure trace; the population is bounded and saved.
void Loop::update_population() {
  if (planner_->policy() != search::Policy::kEngine || outcome_.attempts.empty()) return;
  search::Outcome r;
  r.problem = problem_.name;
  r.problem_class = problem_class_;
  r.correct = outcome_.best.has_value();
  r.speedup = outcome_.best ? outcome_.attempts[*outcome_.best].speedup.value_or(0) : 0;
  r.cost_usd = spent();
  r.evaluations = static_cast<int>(outcome_.attempts.size());
  r.evaluations_to_best = outcome_.best ? outcome_.attempts[*outcome_.best].number : 0;
  for (const auto& i : planner_->intents())
    if (auto f = failure_of(i)) r.failures.push_back(failure_entry(*f));
  for (const auto& d : decisions_)
    if (d.kind == "stagnation")
      r.failures.push_back(failure_entry({FailureReason::kStagnation, ""}));
  // Read, learn and write in one write transaction: sessions of a sweep finish side by side and
  // each must add to the population, not overwrite another's lesson.
  bool began = false;
  std::string mutated;
  std::vector<std::string> deferred;  // told once the transaction has ended
  auto w = deps_.store->transaction([&]() -> util::Result<void> {
    began = true;
    if (auto pop = load_population(&deferred)) population_ = std::move(*pop);
    // Pruned meanwhile by another session: its lesson has nowhere to go.
    if (!population_.find(strategy_.id)) return {};
    population_.record(strategy_.id, r);
    std::mt19937_64 rng(options_.seed ^ 0x3EF1EC7ull);
    const search::Strategy& child = population_.mutate(strategy_.id, problem_class_, rng);
    mutated = fmt::format("{} -> {}: {}", strategy_.id, child.id, child.mutation);
    population_.prune();
    return deps_.store->put_search_state("global", "strategies", population_.to_json().dump());
  });
  for (const auto& why : deferred) observer_.warning(why);
  if (!w) {
    observer_.warning(fmt::format("the strategy population was not {}: {}",
                                  began ? "saved" : "updated", w.error().message));
    return;
  }
  if (!mutated.empty()) observer_.search_decision(standing(), -1, "strategy_mutated", mutated);
}

std::string Loop::stop_reason_now() const {
  if (cancelled()) return "interrupted";
  if (deps_.control && deps_.control->stop_requested()) return "stopped";
  if (options_.budget_usd && spent() >= *options_.budget_usd) return "budget";
  if (options_.budget_wall_s && seconds_since(started_at_) >= *options_.budget_wall_s)
    return "wall_time";
  if (!device_time_left()) return "device_time";
  return "";
}

void Loop::publish_decisions() {
  for (auto& d : planner_->take_decisions()) {
    observer_.search_decision(standing(), d.intent, d.kind, d.text);
    decisions_.push_back(std::move(d));
  }
}

// The search state: in the store (after every evaluation) and OUT/intents.json.
void Loop::checkpoint() {
  json j = planner_->to_json();
  j["session"] = session_id_;
  j["strategy"] = strategy_.to_json();
  j["problem_class"] = problem_class_;
  j["in_flight"] = in_flight_;
  const double wall = started_at_ == Clock::time_point{} ? 0.0 : seconds_since(started_at_);
  j["device_busy_s"] = device_busy_s_;
  j["wall_s"] = wall;
  j["device_busy_fraction"] = wall > 0 ? device_busy_s_ / wall : 0.0;
  // From the first evaluation's start to the last one's end: the pipeline once it is full,
  // without the first generation's wait and the last diagnosis.
  const double span =
      first_evaluation_start_ == Clock::time_point{}
          ? 0.0
          : std::chrono::duration<double>(last_evaluation_end_ - first_evaluation_start_).count();
  j["device_busy_fraction_steady"] = span > 0 ? std::min(1.0, device_busy_s_ / span) : 0.0;
  j["evaluations"] = evaluations_;
  j["evaluations_to_best"] =
      outcome_.best ? json(outcome_.attempts[*outcome_.best].number) : json(nullptr);
  j["decisions"] = static_cast<int>(decisions_.size());
  // The report gets the summary; the store and OUT/intents.json the whole tree.
  outcome_.search = json::object();
  for (const char* k : {"policy", "problem_class", "in_flight", "device_busy_s", "wall_s",
                        "device_busy_fraction", "device_busy_fraction_steady", "evaluations",
                        "evaluations_to_best", "decisions", "space_size", "best_point"})
    outcome_.search[k] = j[k];
  outcome_.search["strategy"] = strategy_.id;
  outcome_.search["intents"] = j["intents"].size();
  outcome_.search["intents_json"] = (options_.out_dir / "intents.json").string();
  if (prebuilder_) outcome_.search["prebuild"] = prebuilder_->summary();
  if (!skills_report_.is_null()) j["skills"] = outcome_.search["skills"] = skills_report_;
  if (auto w = deps_.store->put_search_state(session_id_, "intents", j.dump()); !w)
    observer_.warning("the intent tree was not saved: " + w.error().message);
  (void)util::write_file(options_.out_dir / "intents.json", j.dump(2) + "\n");
}

}  // namespace ok::optimize
