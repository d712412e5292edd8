#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "search/strategy.hpp"

using nlohmann::json;
using ok::search::Objectives;
using ok::search::Outcome;
using ok::search::Population;
using ok::search::Strategy;
using ok::util::ErrorKind;

namespace {

Outcome outcome(const std::string& cls, bool correct, double speedup, double cost,
                std::vector<std::string> failures = {}, int evaluations = 10,
                int evaluations_to_best = 3) {
  Outcome o;
  o.problem = "p";
  o.problem_class = cls;
  o.correct = correct;
  o.speedup = speedup;
  o.cost_usd = cost;
  o.evaluations = evaluations;
  o.evaluations_to_best = evaluations_to_best;
  o.failures = std::move(failures);
  return o;
}

std::vector<std::string> ids(const std::vector<const Strategy*>& v) {
  std::vector<std::string> out;
  for (const auto* s : v) out.push_back(s->id);
  return out;
}

bool in_range(const Strategy& s) {
  return Strategy::from_json(s.to_json()).has_value();
}

// A population of one strategy given as JSON fields over the defaults.
Population single(const json& fields) {
  json s = {{"id", "s"}};
  s.update(fields);
  auto p = Population::from_json({{"strategies", json::array({s})}});
  EXPECT_TRUE(p.has_value()) << p.error().message;
  return *p;
}

const std::vector<std::string> kStuck = {"stagnation", "no_gain", "no gain: x0.970 of the best",
                                         "stagnation", "pruned on stagnation"};
const std::vector<std::string> kBroken = {"mismatch", "compile_error",
                                          "incorrect; retry with the critic's diagnosis",
                                          "mismatch", "runtime_error"};

}  // namespace

TEST(Strategy, SeedsAreDistinctValidAndUntried) {
  Population p = Population::seeded();
  const auto& seeds = p.strategies();
  ASSERT_GE(seeds.size(), 3u);
  ASSERT_LE(seeds.size(), 4u);
  std::set<std::string> names;
  std::set<std::vector<double>> knobs;
  for (const auto& s : seeds) {
    names.insert(s.id);
    knobs.insert({s.exploration, double(s.stagnation_window), s.min_gain, double(s.jump_distance),
                  s.diagnosis_weight});
    EXPECT_TRUE(s.parent.empty()) << s.id;
    EXPECT_TRUE(s.mutation.empty()) << s.id;
    EXPECT_FALSE(s.guidance.empty()) << s.id;
    EXPECT_LT(s.guidance.size(), 600u) << s.id;
    EXPECT_TRUE(in_range(s)) << s.id;
    EXPECT_EQ(p.objectives(s.id).problems, 0) << s.id;
  }
  EXPECT_EQ(names.size(), seeds.size());
  EXPECT_EQ(knobs.size(), seeds.size());
  EXPECT_NE(p.find("seed-balanced"), nullptr);
  EXPECT_EQ(p.find("nope"), nullptr);
  EXPECT_TRUE(p.frontier().empty());
}

TEST(Strategy, JsonRoundTripKeepsStrategiesRecordsAndMutantCounter) {
  Population p = Population::seeded();
  ASSERT_TRUE(p.record("seed-balanced", outcome("pointwise", true, 1.7, 0.25, kStuck)));
  ASSERT_TRUE(p.record("seed-balanced", outcome("row:softmax", false, 0, 0.5, kBroken)));
  ASSERT_TRUE(p.record("seed-explore", outcome("", true, 3.0, 0.1)));
  std::mt19937_64 rng(7);
  std::string child = p.mutate("seed-balanced", "pointwise", rng).id;
  ASSERT_TRUE(p.record(child, outcome("pointwise", true, 2.5, 0.1, {"no_gain"})));

  json j = p.to_json();
  auto back = Population::from_json(json::parse(j.dump()));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->to_json(), j);
  ASSERT_EQ(back->strategies().size(), p.strategies().size());
  for (size_t i = 0; i < p.strategies().size(); ++i) {
    const Strategy& a = p.strategies()[i];
    const Strategy& b = back->strategies()[i];
    EXPECT_EQ(a.to_json(), b.to_json());
    for (const char* cls : {"", "pointwise", "row:softmax", "other"}) {
      Objectives x = p.objectives(a.id, cls), y = back->objectives(b.id, cls);
      EXPECT_EQ(x.problems, y.problems);
      EXPECT_DOUBLE_EQ(x.geomean_speedup, y.geomean_speedup);
      EXPECT_DOUBLE_EQ(x.correctness_rate, y.correctness_rate);
      EXPECT_DOUBLE_EQ(x.cost_usd, y.cost_usd);
    }
  }
  // The failure traces and the mutant counter came back too: the same mutation follows.
  std::mt19937_64 r1(3), r2(3);
  const Strategy& m1 = p.mutate("seed-balanced", "", r1);
  const Strategy& m2 = back->mutate("seed-balanced", "", r2);
  EXPECT_EQ(m1.to_json(), m2.to_json());
}

TEST(Strategy, KeepsOnlyTheLastTwentyFailuresPerClass) {
  Population p = Population::seeded();
  std::vector<std::string> many;
  for (int i = 0; i < 30; ++i) many.push_back("f" + std::to_string(i));
  ASSERT_TRUE(p.record("seed-exploit", outcome("pointwise", false, 0, 0, many)));
  json rec = p.to_json()["strategies"][1]["records"]["pointwise"];
  ASSERT_EQ(rec["failures"].size(), 20u);
  EXPECT_EQ(rec["failures"].front(), "f10");
  EXPECT_EQ(rec["failures"].back(), "f29");
}

TEST(Strategy, FromJsonRejectsBadFieldsNamingThem) {
  struct Case {
    json fields;
    std::string field;
  };
  std::vector<Case> cases = {
      {{{"exploration", 3.5}}, "exploration"},
      {{{"exploration", "high"}}, "exploration"},
      {{{"stagnation_window", 1}}, "stagnation_window"},
      {{{"stagnation_window", 3.5}}, "stagnation_window"},
      {{{"min_gain", 0.5}}, "min_gain"},
      {{{"jump_distance", 0}}, "jump_distance"},
      {{{"diagnosis_weight", -0.1}}, "diagnosis_weight"},
      {{{"guidance", 3}}, "guidance"},
      {{{"parent", nullptr}}, "parent"},
      {{{"id", ""}}, "id"},
      {{{"id", 4}}, "id"},
  };
  for (const auto& c : cases) {
    json s = {{"id", "s"}};
    s.update(c.fields);
    auto r = Strategy::from_json(s);
    ASSERT_FALSE(r.has_value()) << s.dump();
    EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
    EXPECT_NE(r.error().message.find(c.field), std::string::npos) << r.error().message;
    // The population names the strategy's position and the field.
    auto p = Population::from_json({{"strategies", json::array({{{"id", "ok"}}, s})}});
    ASSERT_FALSE(p.has_value()) << s.dump();
    EXPECT_EQ(p.error().kind, ErrorKind::kBadInput);
    EXPECT_NE(p.error().message.find("strategies[1]"), std::string::npos) << p.error().message;
    EXPECT_NE(p.error().message.find(c.field), std::string::npos) << p.error().message;
  }
  EXPECT_FALSE(Strategy::from_json(json::array()).has_value());
}

TEST(Strategy, PopulationFromJsonRejectsBadStructure) {
  struct Case {
    json j;
    std::string says;
  };
  json good = Population::seeded().to_json();
  json dup = good;
  dup["strategies"][2]["id"] = "seed-balanced";
  json bad_record = good;
  bad_record["strategies"][0]["records"] = {{"pointwise", {{"problems", 1}, {"correct", 2}}}};
  json neg_record = good;
  neg_record["strategies"][0]["records"] = {{"pointwise", {{"problems", -1}}}};
  json bad_failures = good;
  bad_failures["strategies"][0]["records"] = {
      {"pointwise", {{"problems", 1}, {"failures", json::array({1})}}}};
  json bad_counter = good;
  bad_counter["next_mutant"] = "three";
  std::vector<Case> cases = {
      {json::array(), "object"},
      {json::object(), "strategies"},
      {{{"strategies", json::array()}}, "strategies"},
      {dup, "duplicate"},
      {bad_record, "records.pointwise"},
      {neg_record, "records.pointwise.problems"},
      {bad_failures, "records.pointwise.failures"},
      {bad_counter, "next_mutant"},
  };
  for (const auto& c : cases) {
    auto p = Population::from_json(c.j);
    ASSERT_FALSE(p.has_value()) << c.says;
    EXPECT_EQ(p.error().kind, ErrorKind::kBadInput);
    EXPECT_NE(p.error().message.find(c.says), std::string::npos) << p.error().message;
  }
  EXPECT_TRUE(Population::from_json(good).has_value());
}

TEST(Strategy, ObjectivesCountIncorrectProblemsAsSpeedupOne) {
  Population p = Population::seeded();
  // pointwise: 9x correct ($0.10), an incorrect one claiming 50x ($0.30).
  ASSERT_TRUE(p.record("seed-balanced", outcome("pointwise", true, 9.0, 0.10)));
  ASSERT_TRUE(p.record("seed-balanced", outcome("pointwise", false, 50.0, 0.30)));
  // row:softmax: 8x correct ($0.20); and one unclassed problem, 0.5x correct ($0).
  ASSERT_TRUE(p.record("seed-balanced", outcome("row:softmax", true, 8.0, 0.20)));
  ASSERT_TRUE(p.record("seed-balanced", outcome("", true, 0.5, 0.0)));

  Objectives pw = p.objectives("seed-balanced", "pointwise");
  EXPECT_EQ(pw.problems, 2);
  EXPECT_NEAR(pw.geomean_speedup, 3.0, 1e-12);  // sqrt(9 * 1)
  EXPECT_DOUBLE_EQ(pw.correctness_rate, 0.5);
  EXPECT_NEAR(pw.cost_usd, 0.20, 1e-12);

  Objectives row = p.objectives("seed-balanced", "row:softmax");
  EXPECT_EQ(row.problems, 1);
  EXPECT_NEAR(row.geomean_speedup, 8.0, 1e-12);
  EXPECT_DOUBLE_EQ(row.correctness_rate, 1.0);

  Objectives other = p.objectives("seed-balanced", "other");  // "" is recorded as "other"
  EXPECT_EQ(other.problems, 1);
  EXPECT_NEAR(other.geomean_speedup, 0.5, 1e-12);

  Objectives all = p.objectives("seed-balanced");
  EXPECT_EQ(all.problems, 4);
  EXPECT_NEAR(all.geomean_speedup, std::pow(9.0 * 1.0 * 8.0 * 0.5, 0.25), 1e-12);
  EXPECT_DOUBLE_EQ(all.correctness_rate, 0.75);
  EXPECT_NEAR(all.cost_usd, 0.60 / 4, 1e-12);

  EXPECT_EQ(p.objectives("seed-exploit").problems, 0);
  EXPECT_EQ(p.objectives("seed-balanced", "reduction").problems, 0);
  EXPECT_FALSE(p.record("no-such-strategy", outcome("pointwise", true, 2, 0)));
  EXPECT_EQ(p.objectives("no-such-strategy").problems, 0);
}

TEST(Strategy, FrontierDropsDominatedKeepsCheaperButSlowerAndTies) {
  Population p = Population::seeded();
  p.record("seed-balanced", outcome("c", true, 2.0, 1.0));
  p.record("seed-exploit", outcome("c", true, 1.5, 2.0));  // dominated by balanced
  p.record("seed-explore", outcome("c", true, 1.2, 0.1));  // cheaper but slower: kept
  // seed-profile untried: excluded.
  EXPECT_EQ(ids(p.frontier("c")), (std::vector<std::string>{"seed-balanced", "seed-explore"}));
  EXPECT_TRUE(p.frontier("d").empty());

  // Equal on all three objectives: both kept, ordered by id.
  p.record("seed-profile", outcome("c", true, 2.0, 1.0));
  EXPECT_EQ(ids(p.frontier("c")),
            (std::vector<std::string>{"seed-balanced", "seed-profile", "seed-explore"}));

  // A correctness advantage alone keeps a slower, dearer strategy on the frontier of its class.
  p.record("seed-exploit", outcome("e", true, 1.1, 5.0));
  p.record("seed-balanced", outcome("e", false, 0, 1.0));
  EXPECT_EQ(ids(p.frontier("e")), (std::vector<std::string>{"seed-exploit", "seed-balanced"}));
}

TEST(Strategy, ChooseTriesUntriedFirstThenTheBestOfTheClass) {
  Population p = Population::seeded();
  std::mt19937_64 rng(1);
  EXPECT_EQ(p.choose("c", rng, 0).id, "seed-balanced");
  p.record("seed-balanced", outcome("c", true, 1.5, 1.0));
  EXPECT_EQ(p.choose("c", rng, 0).id, "seed-exploit");
  EXPECT_EQ(p.choose("d", rng, 0).id, "seed-balanced");  // untried on another class
  p.record("seed-exploit", outcome("c", true, 3.0, 1.0));
  p.record("seed-explore", outcome("c", false, 0, 1.0));
  p.record("seed-profile", outcome("c", true, 1.2, 0.5));
  EXPECT_EQ(p.choose("c", rng, 0).id, "seed-exploit");
  // A new mutant is untried, so it is tried next.
  const std::string child = p.mutate("seed-exploit", "c", rng).id;
  EXPECT_EQ(p.choose("c", rng, 0).id, child);
  p.record(child, outcome("c", true, 2.0, 0.2));
  EXPECT_EQ(p.choose("c", rng, 0).id, "seed-exploit");
  // Best per class: on "d" the profile-led strategy wins.
  for (const auto& s : p.strategies()) p.record(s.id, outcome("d", true, 1.1, 0.2));
  p.record("seed-profile", outcome("d", true, 4.0, 0.2));
  EXPECT_EQ(p.choose("d", rng, 0).id, "seed-profile");
  // "" means "other".
  EXPECT_EQ(p.choose("", rng, 0).id, "seed-balanced");
  p.record("seed-balanced", outcome("other", true, 1.1, 0.2));
  EXPECT_EQ(p.choose("", rng, 0).id, "seed-exploit");
}

TEST(Strategy, ChooseIsDeterministicAndExploresTheWholeFrontier) {
  Population p = Population::seeded();
  p.record("seed-balanced", outcome("c", true, 2.0, 1.0));
  p.record("seed-exploit", outcome("c", true, 1.5, 2.0));
  p.record("seed-explore", outcome("c", true, 1.2, 0.1));
  p.record("seed-profile", outcome("c", true, 1.0, 3.0));
  auto run = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::string> picks;
    for (int i = 0; i < 200; ++i) picks.push_back(p.choose("c", rng, 0.5).id);
    return picks;
  };
  auto a = run(42);
  EXPECT_EQ(a, run(42));
  std::set<std::string> seen(a.begin(), a.end());
  EXPECT_EQ(seen, (std::set<std::string>{"seed-balanced", "seed-explore"}));  // frontier only
  auto best = std::count(a.begin(), a.end(), "seed-balanced");
  EXPECT_GT(best, 120);  // about 75%: exploit 50% + half of the 50% uniform draws
  EXPECT_LT(best, 180);
}

TEST(Strategy, StagnationTracesRaiseExplorationAndJumps) {
  Population p = Population::seeded();
  const Strategy parent = *p.find("seed-balanced");
  p.record("seed-balanced", outcome("c", true, 1.3, 0.1, kStuck));
  std::mt19937_64 rng(5);
  const size_t before = p.strategies().size();
  Strategy child = p.mutate("seed-balanced", "c", rng);
  EXPECT_EQ(p.strategies().size(), before + 1);
  EXPECT_GT(child.exploration, parent.exploration);
  EXPECT_GT(child.jump_distance, parent.jump_distance);
  EXPECT_LT(child.stagnation_window, parent.stagnation_window);
  EXPECT_EQ(child.parent, "seed-balanced");
  EXPECT_EQ(p.find(child.id)->parent, "seed-balanced");
  EXPECT_NE(child.id, parent.id);
  EXPECT_NE(child.mutation.find("stagnation"), std::string::npos) << child.mutation;
  EXPECT_NE(child.mutation.find("exploration"), std::string::npos) << child.mutation;
  EXPECT_EQ(child.guidance.rfind(parent.guidance, 0), 0u);  // the lesson is appended
  EXPECT_GT(child.guidance.size(), parent.guidance.size());
  EXPECT_TRUE(in_range(child));
  EXPECT_EQ(p.objectives(child.id).problems, 0);  // untried

  // Ids stay unique when the same parent mutates again.
  Strategy second = p.mutate("seed-balanced", "c", rng);
  EXPECT_NE(second.id, child.id);
  std::set<std::string> all;
  for (const auto& s : p.strategies()) all.insert(s.id);
  EXPECT_EQ(all.size(), p.strategies().size());
}

TEST(Strategy, MismatchTracesLowerExplorationAndRaiseDiagnosis) {
  Population p = Population::seeded();
  const Strategy parent = *p.find("seed-explore");
  p.record("seed-explore", outcome("c", false, 0, 0.1, kBroken));
  std::mt19937_64 rng(5);
  Strategy child = p.mutate("seed-explore", "c", rng);
  EXPECT_LT(child.exploration, parent.exploration);
  EXPECT_GT(child.diagnosis_weight, parent.diagnosis_weight);
  EXPECT_LE(child.jump_distance, parent.jump_distance);
  EXPECT_EQ(child.parent, "seed-explore");
  EXPECT_NE(child.guidance.find("Lesson:"), std::string::npos);
  EXPECT_TRUE(in_range(child));

  // Traces of another class do not steer a mutation on this class.
  Population q = Population::seeded();
  q.record("seed-explore", outcome("other-class", false, 0, 0.1, kBroken));
  std::mt19937_64 rng2(5);
  Strategy unsteered = q.mutate("seed-explore", "c", rng2);
  EXPECT_NE(unsteered.mutation.find("at random"), std::string::npos) << unsteered.mutation;
}

TEST(Strategy, LateBestShortensTheStagnationWindow) {
  Population p = Population::seeded();
  const Strategy parent = *p.find("seed-explore");
  p.record("seed-explore", outcome("c", true, 2.0, 0.1, {}, 12, 11));
  std::mt19937_64 rng(5);
  Strategy child = p.mutate("seed-explore", "c", rng);
  EXPECT_LT(child.stagnation_window, parent.stagnation_window);
  EXPECT_NE(child.mutation.find("late"), std::string::npos) << child.mutation;
}

TEST(Strategy, MutationClampsToRanges) {
  Population p = single({{"exploration", 2.95}, {"jump_distance", 4}, {"stagnation_window", 2}});
  p.record("s", outcome("c", true, 1.1, 0, kStuck));
  std::mt19937_64 rng(9);
  Strategy child = p.mutate("s", "c", rng);
  EXPECT_DOUBLE_EQ(child.exploration, 3.0);
  EXPECT_EQ(child.jump_distance, 4);
  EXPECT_EQ(child.stagnation_window, 2);
  EXPECT_TRUE(in_range(child));

  Population q = single({{"exploration", 0.05}, {"diagnosis_weight", 2.9}, {"jump_distance", 1}});
  q.record("s", outcome("c", false, 0, 0, kBroken));
  Strategy careful = q.mutate("s", "c", rng);
  EXPECT_DOUBLE_EQ(careful.exploration, 0.0);
  EXPECT_DOUBLE_EQ(careful.diagnosis_weight, 3.0);
  EXPECT_EQ(careful.jump_distance, 1);
  EXPECT_TRUE(in_range(careful));
}

TEST(Strategy, BlockedOrSignallessMutationPerturbsOneKnobDeterministically) {
  // Every move stagnation suggests is at its limit: one knob moves at random instead.
  Population p = single({{"exploration", 3.0}, {"jump_distance", 4}, {"stagnation_window", 2}});
  p.record("s", outcome("c", true, 1.1, 0, kStuck));
  std::mt19937_64 rng(9);
  Strategy child = p.mutate("s", "c", rng);
  EXPECT_NE(child.mutation.find("at random"), std::string::npos) << child.mutation;
  const Strategy& s = *p.find("s");
  EXPECT_TRUE(child.exploration != s.exploration ||
              child.stagnation_window != s.stagnation_window || child.min_gain != s.min_gain ||
              child.jump_distance != s.jump_distance ||
              child.diagnosis_weight != s.diagnosis_weight);
  EXPECT_TRUE(in_range(child));

  // No trace at all: exactly one knob changes, the same one for the same rng seed.
  auto perturbed = [](uint64_t seed) {
    Population q = Population::seeded();
    std::mt19937_64 r(seed);
    return q.mutate("seed-balanced", "", r);
  };
  const Strategy parent = *Population::seeded().find("seed-balanced");
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Strategy a = perturbed(seed);
    EXPECT_EQ(a.to_json(), perturbed(seed).to_json());
    int changed = (a.exploration != parent.exploration) +
                  (a.stagnation_window != parent.stagnation_window) +
                  (a.min_gain != parent.min_gain) + (a.jump_distance != parent.jump_distance) +
                  (a.diagnosis_weight != parent.diagnosis_weight);
    EXPECT_EQ(changed, 1) << a.mutation;
    EXPECT_NE(a.mutation.find("at random"), std::string::npos) << a.mutation;
    EXPECT_EQ(a.guidance, parent.guidance);  // no lesson without a signal
    EXPECT_TRUE(in_range(a));
  }
}

TEST(Strategy, GuidanceStaysBoundedDroppingTheOldestLessons) {
  std::string base = "Base advice for the generator.";
  std::string guidance = base;
  for (int i = 1; i <= 3; ++i)
    guidance += "\nLesson: old lesson " + std::to_string(i) + " " + std::string(150, 'x') + ".";
  ASSERT_LT(guidance.size(), 600u);
  Population p = single({{"guidance", guidance}});
  p.record("s", outcome("c", true, 1.1, 0, kStuck));
  std::mt19937_64 rng(1);
  Strategy child = p.mutate("s", "c", rng);
  EXPECT_LT(child.guidance.size(), 600u);
  EXPECT_EQ(child.guidance.rfind(base, 0), 0u);
  EXPECT_EQ(child.guidance.find("old lesson 1"), std::string::npos);
  EXPECT_NE(child.guidance.find("old lesson 3"), std::string::npos);
  EXPECT_NE(child.guidance.find("stalled"), std::string::npos) << child.guidance;

  // A long chain of reflective mutations never grows the guidance past the bound.
  Population chain = Population::seeded();
  std::string id = "seed-profile";
  for (int i = 0; i < 40; ++i) {
    std::vector<std::string> trace = (i % 2) ? kStuck : kBroken;
    chain.record(id, outcome("c", i % 3 == 0, 1.05, 1.0, trace, 10, 9));
    id = chain.mutate(id, "c", rng).id;
    EXPECT_LT(chain.find(id)->guidance.size(), 600u);
    EXPECT_TRUE(in_range(*chain.find(id)));
  }
}

TEST(Strategy, PruneKeepsFrontierMembersAndBoundsTheSize) {
  Population p = Population::seeded();
  p.record("seed-balanced", outcome("c", true, 2.0, 1.0));  // frontier
  p.record("seed-exploit", outcome("c", true, 1.5, 2.0));   // dominated
  p.record("seed-explore", outcome("c", true, 1.2, 0.1));   // frontier (cheap)
  p.record("seed-profile", outcome("c", false, 0, 3.0));    // dominated
  std::mt19937_64 rng(2);
  std::vector<std::string> mutants;
  for (int i = 0; i < 8; ++i) mutants.push_back(p.mutate("seed-balanced", "c", rng).id);
  for (int i = 0; i < 4; ++i) p.record(mutants[i], outcome("c", true, 1.1, 5.0));  // dominated
  // mutants[0] is alone, so on the frontier, on class "d".
  p.record(mutants[0], outcome("d", true, 1.1, 5.0));
  ASSERT_EQ(p.strategies().size(), 12u);

  p.prune(6);
  std::vector<std::string> left;
  for (const auto& s : p.strategies()) left.push_back(s.id);
  EXPECT_EQ(left, (std::vector<std::string>{"seed-balanced", "seed-explore", mutants[0], mutants[5],
                                            mutants[6], mutants[7]}));
  // Pruned strategies' records are gone from the JSON as well.
  EXPECT_EQ(p.objectives("seed-exploit").problems, 0);
  EXPECT_TRUE(Population::from_json(p.to_json()).has_value());

  // Below what can go: frontier members of every class stay.
  p.prune(1);
  left.clear();
  for (const auto& s : p.strategies()) left.push_back(s.id);
  EXPECT_EQ(left, (std::vector<std::string>{"seed-balanced", "seed-explore", mutants[0]}));

  // Untried seeds are never removed; untried mutants are.
  Population q = Population::seeded();
  for (int i = 0; i < 10; ++i) q.mutate("seed-balanced", "", rng);
  q.prune(2);
  ASSERT_EQ(q.strategies().size(), 4u);
  for (const auto& s : q.strategies()) EXPECT_TRUE(s.parent.empty()) << s.id;

  // Within bounds: nothing changes.
  Population r = Population::seeded();
  r.prune();
  EXPECT_EQ(r.strategies().size(), 4u);
}
