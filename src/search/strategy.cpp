// The strategy population's logic (strategy.hpp): the seeds, the objectives and frontier, choose,
// record, the reflective mutate and prune. Their JSON form (to_json/from_json) is in
// strategy_json.cpp.
#include "search/strategy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <string_view>

#include "search/strategy_internal.hpp"

namespace ok::search {

namespace {

constexpr size_t kMaxGuidance = 600;  // guidance stays strictly shorter
constexpr std::string_view kLessonPrefix = "Lesson: ";

// The class a problem is recorded under.
std::string class_key(const std::string& problem_class) {
  return problem_class.empty() ? "other" : problem_class;
}

// A uniform double in [0, 1) from the generator's raw bits (the same on every standard library).
double unit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// `v` to `decimals` places: 0.7 stays 0.7 (a division by a power of ten rounds correctly).
double round_to(double v, int decimals) {
  double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains_any(const std::string& s, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](std::string_view w) { return s.find(w) != std::string::npos; });
}

// What a failure-trace entry says about the search: it produced broken candidates, it was stuck
// (no progress), or neither that we can tell.
enum class Failure { kBroken, kStuck, kOther };

Failure classify(const std::string& entry) {
  std::string s = lower(entry);
  if (contains_any(s, {"mismatch", "incorrect", "compile", "runtime", "rejected", "timeout",
                       "generation failed", "crash"}))
    return Failure::kBroken;
  if (contains_any(s, {"stagnation", "no_gain", "no gain", "pruned", "slower"}))
    return Failure::kStuck;
  return Failure::kOther;
}

// `guidance` with `lesson` appended as its own line; the oldest lessons go first while the text
// is too long, then the new lesson, then the end of the base text.
std::string with_lesson(const std::string& guidance, const std::string& lesson) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= guidance.size() && !guidance.empty()) {
    size_t end = guidance.find('\n', start);
    if (end == std::string::npos) end = guidance.size();
    if (end > start) lines.push_back(guidance.substr(start, end - start));
    start = end + 1;
  }
  if (!lesson.empty()) lines.push_back(std::string(kLessonPrefix) + lesson);
  auto is_lesson = [](const std::string& l) { return l.starts_with(kLessonPrefix); };
  auto joined = [&] {
    std::string out;
    for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l;
    return out;
  };
  std::string text = joined();
  while (text.size() >= kMaxGuidance) {
    auto oldest = std::find_if(lines.begin(), lines.end(), is_lesson);
    if (oldest == lines.end()) break;
    lines.erase(oldest);  // the new lesson is the last to go
    text = joined();
  }
  if (text.size() >= kMaxGuidance) {
    size_t cut = kMaxGuidance - 1;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text.resize(cut);
  }
  return text;
}

// "m3-seed-balanced" -> "seed-balanced": the id a strategy's lineage started from.
std::string root_of(const std::string& id) {
  std::string s = id;
  while (s.size() > 2 && s[0] == 'm' && std::isdigit(static_cast<unsigned char>(s[1]))) {
    size_t i = 1;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size() || s[i] != '-') break;
    s = s.substr(i + 1);
  }
  return s;
}

Strategy seed(std::string id, double exploration, int window, double min_gain, int jump,
              double diagnosis, std::string guidance) {
  Strategy s;
  s.id = std::move(id);
  s.exploration = exploration;
  s.stagnation_window = window;
  s.min_gain = min_gain;
  s.jump_distance = jump;
  s.diagnosis_weight = diagnosis;
  s.guidance = std::move(guidance);
  return s;
}

bool same_knobs(const Strategy& a, const Strategy& b) {
  return a.exploration == b.exploration && a.stagnation_window == b.stagnation_window &&
         a.min_gain == b.min_gain && a.jump_distance == b.jump_distance &&
         a.diagnosis_weight == b.diagnosis_weight;
}

void clamp_knobs(Strategy& s) {
  using namespace detail;  // the knobs' ranges
  s.exploration = std::clamp(round_to(s.exploration, 3), kExplorationMin, kExplorationMax);
  s.stagnation_window = std::clamp(s.stagnation_window, kWindowMin, kWindowMax);
  s.min_gain = std::clamp(round_to(s.min_gain, 4), kMinGainMin, kMinGainMax);
  s.jump_distance = std::clamp(s.jump_distance, kJumpMin, kJumpMax);
  s.diagnosis_weight = std::clamp(round_to(s.diagnosis_weight, 3), kDiagnosisMin, kDiagnosisMax);
}

// "exploration 0.7->1, jump_distance 2->3": the knobs that differ.
std::string changes(const Strategy& from, const Strategy& to) {
  std::vector<std::string> out;
  auto add = [&](const char* name, double a, double b) {
    if (a != b) out.push_back(fmt::format("{} {:g}->{:g}", name, a, b));
  };
  add("exploration", from.exploration, to.exploration);
  add("stagnation_window", from.stagnation_window, to.stagnation_window);
  add("min_gain", from.min_gain, to.min_gain);
  add("jump_distance", from.jump_distance, to.jump_distance);
  add("diagnosis_weight", from.diagnosis_weight, to.diagnosis_weight);
  std::string s;
  for (const auto& c : out) s += (s.empty() ? "" : ", ") + c;
  return s;
}

// Moves one knob, picked at random, one step up or down (the other way when the range blocks it).
void perturb(Strategy& s, std::mt19937_64& rng) {
  int knob = static_cast<int>(rng() % 5);
  bool up = (rng() & 1) != 0;
  Strategy before = s;
  for (int attempt = 0; attempt < 2 && same_knobs(before, s); ++attempt, up = !up) {
    double sign = up ? 1 : -1;
    switch (knob) {
      case 0:
        s.exploration += sign * 0.25;
        break;
      case 1:
        s.stagnation_window += up ? 1 : -1;
        break;
      case 2:
        s.min_gain = up ? s.min_gain * 1.5 : s.min_gain / 1.5;
        break;
      case 3:
        s.jump_distance += up ? 1 : -1;
        break;
      default:
        s.diagnosis_weight += sign * 0.3;
        break;
    }
    clamp_knobs(s);
  }
}

// What mutate() reads in a strategy's aggregate record: the failure traces by kind and which of
// the four signals they raise, with the figures its reasons quote (copied, as Population::Record
// is private to the population).
struct Evidence {
  int problems = 0, correct = 0, late_best = 0, no_gain = 0;
  double cost_usd = 0;
  int stuck = 0, broken = 0, total = 0;  // failure entries that say stuck, broken, and all of them
  bool is_stuck = false, is_broken = false, is_late = false, is_costly = false;
};

// Counts the failure traces by kind. Broken wins when it has at least as many entries as stuck,
// so the two signals never both hold; either needs at least two entries.
void count_failures(const std::vector<std::string>& failures, Evidence& e) {
  for (const auto& f : failures) {
    switch (classify(f)) {
      case Failure::kStuck:
        ++e.stuck;
        break;
      case Failure::kBroken:
        ++e.broken;
        break;
      case Failure::kOther:
        break;
    }
  }
  e.total = static_cast<int>(failures.size());
  e.is_broken = e.broken >= 2 && e.broken >= e.stuck;
  e.is_stuck = !e.is_broken && e.stuck >= 2;
}

// Moves `child`'s knobs the way each raised signal suggests (unclamped: the caller clamps) and
// adds its reason; returns the lesson for the guidance, "" when no signal was raised. Stuck and
// broken each set their own lesson; late and costly only fill in when there is none yet.
std::string steer(const Evidence& e, Strategy& child, std::vector<std::string>& reasons) {
  std::string lesson;
  if (e.is_stuck) {
    child.exploration += 0.3;
    child.jump_distance += 1;
    child.stagnation_window -= 1;
    reasons.push_back(fmt::format("stagnation or no gain in {} of {} failures", e.stuck, e.total));
    lesson =
        "Progress often stalled: when a line of optimisation stops paying, switch to a "
        "structurally different approach (fusion, tiling, data layout) instead of tuning it "
        "further.";
  }
  if (e.is_broken) {
    child.exploration -= 0.2;
    child.diagnosis_weight += 0.4;
    child.jump_distance -= 1;
    reasons.push_back(
        fmt::format("incorrect or failing candidates in {} of {} failures", e.broken, e.total));
    lesson =
        "Many candidates were wrong or failed to build: change one thing at a time from the last "
        "correct kernel and check indexing, masking and numerics.";
  }
  if (e.is_late) {
    child.stagnation_window -= 1;
    reasons.push_back(
        fmt::format("the best came late (last third of the budget) in {} of {} "
                    "correct problems",
                    e.late_best, e.correct));
    if (lesson.empty())
      lesson =
          "The best kernel came late: try the most promising idea first and drop unproductive "
          "lines sooner.";
  }
  if (e.is_costly) {
    child.min_gain *= 1.5;
    if (!e.is_stuck) child.exploration -= 0.15;
    reasons.push_back(fmt::format("${:.4f} per problem with no gain on {} of {} problems",
                                  e.cost_usd / e.problems, e.no_gain, e.problems));
    if (lesson.empty())
      lesson =
          "Spending did not buy speed: prefer cheap, well-understood optimisations and stop once "
          "gains become marginal.";
  }
  return lesson;
}

// Sets the (clamped) child's `mutation` line from the reasons. When its knobs came out as the
// parent's (no signal, or every suggested move at its limit), one knob is first perturbed at
// random so that the child still differs from its parent.
void describe_mutation(const Strategy& parent, const Evidence& e,
                       const std::vector<std::string>& reasons, Strategy& child,
                       std::mt19937_64& rng) {
  std::string why;
  for (const auto& s : reasons) why += (why.empty() ? "" : "; ") + s;
  Strategy unchanged = parent;  // the parent's knobs as a child would hold them
  clamp_knobs(unchanged);
  if (same_knobs(child, unchanged)) {
    perturb(child, rng);
    child.mutation = (why.empty() ? fmt::format("no clear signal in {} problems and {} failures",
                                                e.problems, e.total)
                                  : why + " (every suggested move is at its limit)") +
                     ": perturbed " + changes(parent, child) + " at random";
  } else {
    child.mutation = why + ": " + changes(parent, child);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Population

Population::Population() {
  strategies_ = {
      seed("seed-balanced", 0.7, 3, 0.02, 2, 1.0,
           "Balance refinement and new ideas: build on the best correct kernel, and switch to a "
           "different approach when a line of work stops paying."),
      seed("seed-exploit", 0.3, 2, 0.01, 1, 1.0,
           "Refine the best correct kernel in small, safe steps: change one thing at a time and "
           "keep what is known to work."),
      seed("seed-explore", 1.8, 5, 0.03, 3, 0.7,
           "Try structurally different approaches (fusion, tiling, data layout, a different "
           "algorithm) before tuning parameters."),
      seed("seed-profile", 0.6, 3, 0.02, 2, 2.2,
           "Let the measured bottleneck decide: if memory-bound, cut the bytes moved (fuse, "
           "vectorise, reuse); if compute-bound, raise utilisation (tensor cores, tiling)."),
  };
}

Population Population::seeded() {
  return Population();
}

const Strategy* Population::find(const std::string& id) const {
  for (const auto& s : strategies_)
    if (s.id == id) return &s;
  return nullptr;
}

Population::Record Population::aggregate(const std::string& id,
                                         const std::string& problem_class) const {
  Record sum;
  auto it = records_.find(id);
  if (it == records_.end()) return sum;
  for (const auto& [cls, r] : it->second) {
    if (!problem_class.empty() && cls != problem_class) continue;
    sum.problems += r.problems;
    sum.correct += r.correct;
    sum.log_speedup_sum += r.log_speedup_sum;
    sum.cost_usd += r.cost_usd;
    sum.evaluations += r.evaluations;
    sum.evaluations_to_best += r.evaluations_to_best;
    sum.late_best += r.late_best;
    sum.no_gain += r.no_gain;
    sum.failures.insert(sum.failures.end(), r.failures.begin(), r.failures.end());
  }
  return sum;
}

bool Population::tried(const std::string& id, const std::string& problem_class) const {
  return aggregate(id, problem_class).problems > 0;
}

Objectives Population::objectives(const std::string& id, const std::string& problem_class) const {
  Record r = aggregate(id, problem_class);
  Objectives o;
  o.problems = r.problems;
  if (r.problems == 0) return o;
  o.geomean_speedup = std::exp(r.log_speedup_sum / r.problems);
  o.correctness_rate = static_cast<double>(r.correct) / r.problems;
  o.cost_usd = r.cost_usd / r.problems;
  return o;
}

std::vector<const Strategy*> Population::frontier(const std::string& problem_class) const {
  std::vector<std::pair<const Strategy*, Objectives>> tried_ones;
  for (const auto& s : strategies_) {
    Objectives o = objectives(s.id, problem_class);
    if (o.problems > 0) tried_ones.emplace_back(&s, o);
  }
  auto dominates = [](const Objectives& a, const Objectives& b) {
    bool no_worse = a.geomean_speedup >= b.geomean_speedup &&
                    a.correctness_rate >= b.correctness_rate && a.cost_usd <= b.cost_usd;
    bool better = a.geomean_speedup > b.geomean_speedup ||
                  a.correctness_rate > b.correctness_rate || a.cost_usd < b.cost_usd;
    return no_worse && better;
  };
  std::vector<std::pair<const Strategy*, Objectives>> front;
  for (const auto& c : tried_ones) {
    bool dominated = std::any_of(tried_ones.begin(), tried_ones.end(), [&](const auto& other) {
      return dominates(other.second, c.second);
    });
    if (!dominated) front.push_back(c);
  }
  std::sort(front.begin(), front.end(), [](const auto& a, const auto& b) {
    if (a.second.geomean_speedup != b.second.geomean_speedup)
      return a.second.geomean_speedup > b.second.geomean_speedup;
    return a.first->id < b.first->id;
  });
  std::vector<const Strategy*> out;
  for (const auto& f : front) out.push_back(f.first);
  return out;
}

const Strategy& Population::choose(const std::string& problem_class, std::mt19937_64& rng,
                                   double explore) const {
  std::string cls = class_key(problem_class);
  for (const auto& s : strategies_)
    if (!tried(s.id, cls)) return s;
  // Every strategy was tried on this class, so both frontiers are non-empty.
  if (unit(rng) < explore) {
    auto all = frontier("");
    if (!all.empty()) return *all[rng() % all.size()];
  }
  auto front = frontier(cls);
  return front.empty() ? strategies_.front() : *front.front();
}

bool Population::record(const std::string& id, const Outcome& o) {
  const Strategy* s = find(id);
  if (!s) return false;
  Record& r = records_[id][class_key(o.problem_class)];
  r.problems += 1;
  bool has_speedup = o.correct && std::isfinite(o.speedup) && o.speedup > 0;
  if (o.correct) r.correct += 1;
  if (has_speedup) r.log_speedup_sum += std::log(o.speedup);
  if (std::isfinite(o.cost_usd)) r.cost_usd += std::max(0.0, o.cost_usd);
  int evaluations = std::max(0, o.evaluations);
  int to_best = std::max(0, o.evaluations_to_best);
  if (evaluations > 0) to_best = std::min(to_best, evaluations);
  r.evaluations += evaluations;
  if (o.correct) {
    r.evaluations_to_best += to_best;
    if (evaluations > 0 && 3 * to_best > 2 * evaluations) r.late_best += 1;
  }
  if (!has_speedup || o.speedup < 1 + s->min_gain) r.no_gain += 1;
  for (const auto& f : o.failures) r.failures.push_back(f);
  detail::keep_last(r.failures, kMaxFailures);
  return true;
}

const Strategy& Population::mutate(const std::string& id, const std::string& problem_class,
                                   std::mt19937_64& rng) {
  const Strategy* found = find(id);
  const Strategy parent = found ? *found : strategies_.front();
  Record r = aggregate(parent.id, problem_class);

  Evidence e{.problems = r.problems,
             .correct = r.correct,
             .late_best = r.late_best,
             .no_gain = r.no_gain,
             .cost_usd = r.cost_usd};
  count_failures(r.failures, e);
  e.is_late = r.late_best > 0 && 2 * r.late_best >= r.correct;
  if (r.problems > 0 && r.cost_usd > 0 && 2 * r.no_gain > r.problems) {
    // Costly: at least the population's mean cost per problem on the same problems.
    double cost = 0;
    int problems = 0;
    for (const auto& s : strategies_) {
      Record other = aggregate(s.id, problem_class);
      cost += other.cost_usd;
      problems += other.problems;
    }
    e.is_costly = r.cost_usd / r.problems >= cost / problems;
  }

  Strategy child = parent;
  std::vector<std::string> reasons;
  std::string lesson = steer(e, child, reasons);
  clamp_knobs(child);
  describe_mutation(parent, e, reasons, child, rng);
  if (!lesson.empty() && parent.guidance.find(lesson) == std::string::npos)
    child.guidance = with_lesson(parent.guidance, lesson);
  else
    child.guidance = with_lesson(parent.guidance, "");

  std::string root = root_of(parent.id);
  do {
    child.id = fmt::format("m{}-{}", next_mutant_++, root);
  } while (find(child.id));
  child.parent = parent.id;
  strategies_.push_back(std::move(child));
  return strategies_.back();
}

void Population::prune(size_t max_size) {
  if (strategies_.size() <= max_size) return;
  // Frontier members of every class and of all classes together are kept.
  std::set<std::string> keep;
  std::set<std::string> classes{""};
  for (const auto& [id, by_class] : records_)
    for (const auto& [cls, r] : by_class) classes.insert(cls);
  for (const auto& cls : classes)
    for (const auto* s : frontier(cls)) keep.insert(s->id);

  // Removal order: dominated mutants, dominated seeds, untried mutants; oldest first within each.
  std::vector<std::string> order;
  for (int pass = 0; pass < 3; ++pass)
    for (const auto& s : strategies_) {
      if (keep.count(s.id)) continue;
      bool is_seed = s.parent.empty();
      bool was_tried = tried(s.id, "");
      if ((pass == 0 && was_tried && !is_seed) || (pass == 1 && was_tried && is_seed) ||
          (pass == 2 && !was_tried && !is_seed))
        order.push_back(s.id);
    }
  std::set<std::string> remove;
  for (const auto& id : order) {
    if (strategies_.size() - remove.size() <= max_size) break;
    remove.insert(id);
  }
  std::erase_if(strategies_, [&](const Strategy& s) { return remove.count(s.id) > 0; });
  for (const auto& id : remove) records_.erase(id);
}

SearchParams search_params(const Strategy& s) {
  SearchParams p;
  p.exploration = s.exploration;
  p.stagnation_window = s.stagnation_window;
  p.min_gain = s.min_gain;
  p.jump_distance = s.jump_distance;
  p.diagnosis_weight = s.diagnosis_weight;
  return p;
}

}  // namespace ok::search
