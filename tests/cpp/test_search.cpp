// The search's middle loop: the template space as axes, and the planner's three policies on
// synthetic landscapes whose optimum is known.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "search/space.hpp"
#include "search/world_model.hpp"

namespace {

using nlohmann::json;
namespace search = ok::search;

// Points of a two-skill space in the proposer's order: increasing rank sum, as src/generate
// orders them. a and b have 4 values, fm 2.
std::vector<json> grid() {
  std::vector<json> pts;
  for (int s = 0; s <= 7; ++s)
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b)
        for (int f = 0; f < 2; ++f)
          if (a + b + f == s)
            pts.push_back({{"k-row", {{"BLOCK_R", 64 << a}, {"num_warps", 1 << b}}},
                           {"k-pw", {{"fast_math", f == 1}}},
                           {"skill", "k-pw+k-row"},
                           {"pattern", "row:sum"}});
  return pts;
}

// The landscape: the prior is wrong about BLOCK_R and num_warps (the best values are the last),
// and fast_math gives wrong results.
struct Truth {
  bool correct = true;
  double speedup = 1;
};
Truth truth(const json& p) {
  int a = 0, b = 0;
  while ((64 << a) != p["k-row"]["BLOCK_R"].get<int>()) ++a;
  while ((1 << b) != p["k-row"]["num_warps"].get<int>()) ++b;
  if (p["k-pw"]["fast_math"].get<bool>()) return {false, 0};
  return {true, (1.0 + 0.3 * a) * (1.0 + 0.2 * b)};
}

search::Observation observe(const search::TemplateSpace& space, size_t point, int n) {
  Truth t = truth(space.point(point));
  search::Observation o;
  o.attempt = n;
  o.evaluated = true;
  o.correct = t.correct;
  o.verdict = t.correct ? "correct" : "incorrect";
  if (t.correct) o.speedup = t.speedup;
  o.point = point;
  o.bottleneck = t.correct ? "memory" : "correctness";
  return o;
}

// Runs a policy for `budget` evaluations; returns the best speedup and the points tried.
std::pair<double, std::vector<size_t>> run(search::Policy policy, int budget, uint64_t seed = 1,
                                           search::Planner** keep = nullptr) {
  static std::unique_ptr<search::Planner> last;
  last = std::make_unique<search::Planner>(policy, search::SearchParams{},
                                           search::TemplateSpace(grid()), seed, "toy");
  double best = 0;
  std::vector<size_t> tried;
  for (int n = 1; n <= budget; ++n) {
    auto d = last->next();
    if (!d) break;
    EXPECT_TRUE(d->point.has_value());
    tried.push_back(*d->point);
    auto o = observe(last->space(), *d->point, n);
    if (o.correct) best = std::max(best, *o.speedup);
    last->observe(*d, o);
  }
  if (keep) *keep = last.get();
  return {best, tried};
}

TEST(TemplateSpace, AxesValuesAndLookups) {
  search::TemplateSpace s(grid());
  ASSERT_EQ(s.size(), 32u);
  ASSERT_EQ(s.axes().size(), 3u);  // skill/pattern (and an intent key) are not axes
  auto warps = s.axis_index("k-row.num_warps");
  ASSERT_TRUE(warps);
  EXPECT_EQ(s.axes()[*warps].values, (std::vector<json>{1, 2, 4, 8}));
  EXPECT_EQ(s.axes()[*warps].bottleneck, "occupancy");
  // find ignores the meta keys, including an attempt's intent.
  json p = s.point(5);
  p["intent"] = {{"id", 3}, {"title", "x"}};
  EXPECT_EQ(s.find(p), std::optional<size_t>(5));
  // A neighbour changes the asked axis and as little else as possible.
  auto n = s.neighbour(0, *warps, 8, {});
  ASSERT_TRUE(n);
  EXPECT_EQ(s.value(*n, *warps), 8);
  EXPECT_EQ(s.distance(0, *n), 1);
  // Every point with that value tried: none.
  std::set<size_t> tried;
  for (size_t i = 0; i < s.size(); ++i)
    if (s.value(i, *warps) == 8) tried.insert(i);
  EXPECT_FALSE(s.neighbour(0, *warps, 8, tried));
  // A jump lands at least two axes away.
  auto j = s.jump({0}, 2, {0});
  ASSERT_TRUE(j);
  EXPECT_GE(s.distance(0, *j), 2);
  EXPECT_NE(s.describe(0).find("num_warps=1"), std::string::npos);
}

TEST(Planner, EngineStartsFromThePriorThenClimbsToTheOptimum) {
  search::Planner* p = nullptr;
  auto [best, tried] = run(search::Policy::kEngine, 12, 1, &p);
  EXPECT_EQ(tried.front(), 0u);  // the proposer's best prior first
  const double optimum = (1 + 0.9) * (1 + 0.6);
  EXPECT_NEAR(best, optimum, 1e-9) << "the engine should reach the optimum in 12 evaluations";
  // Each point at most once.
  EXPECT_EQ(std::set<size_t>(tried.begin(), tried.end()).size(), tried.size());
  // The prior order, at the same budget, does not get there.
  auto [prior_best, prior_tried] = run(search::Policy::kPrior, 12);
  EXPECT_LT(prior_best, optimum);
  for (size_t i = 0; i < prior_tried.size(); ++i) EXPECT_EQ(prior_tried[i], i);
}

TEST(Planner, AWrongValueIsPrunedAndNeverTriedAgain) {
  search::Planner* p = nullptr;
  auto [best, tried] = run(search::Policy::kEngine, 16, 1, &p);
  auto fm = p->space().axis_index("k-pw.fast_math");
  ASSERT_TRUE(fm);
  int wrong = 0;
  for (size_t t : tried) wrong += p->space().value(t, *fm) == true;
  EXPECT_EQ(wrong, 1) << "fast_math=true gave wrong results once; it must not come back";
  bool pruned = false;
  for (const auto& i : p->intents())
    pruned |= i.status == "pruned" && i.note.find("fast_math=true") != std::string::npos;
  EXPECT_TRUE(pruned);
}

TEST(Planner, IsDeterministicGivenTheSeed) {
  EXPECT_EQ(run(search::Policy::kEngine, 10, 7).second, run(search::Policy::kEngine, 10, 7).second);
  EXPECT_EQ(run(search::Policy::kBestOfN, 10, 7).second,
            run(search::Policy::kBestOfN, 10, 7).second);
  EXPECT_NE(run(search::Policy::kBestOfN, 10, 7).second,
            run(search::Policy::kBestOfN, 10, 8).second);
}

TEST(Planner, BestOfNSamplesWithoutReplacementUntilExhausted) {
  auto [best, tried] = run(search::Policy::kBestOfN, 100, 3);
  EXPECT_EQ(tried.size(), 32u);
  EXPECT_EQ(std::set<size_t>(tried.begin(), tried.end()).size(), 32u);
}

TEST(Planner, EngineBeatsBestOfNOnAverage) {
  double engine = 0, sampled = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    engine += std::log(run(search::Policy::kEngine, 8, seed).first);
    sampled += std::log(std::max(1e-9, run(search::Policy::kBestOfN, 8, seed).first));
  }
  EXPECT_GT(engine, sampled);
}

// The engine's first `steps` points on a landscape where every point is correct and point 1, the
// prior's second, is the optimum (3.0x; the rest 2.7x), with the critic's `bottleneck`.
std::vector<size_t> first_steps(search::Planner& p, int steps, const std::string& bottleneck) {
  std::vector<size_t> tried;
  for (int n = 1; n <= steps; ++n) {
    auto d = p.next();
    EXPECT_TRUE(d && d->point);
    if (!d || !d->point) break;
    tried.push_back(*d->point);
    search::Observation o;
    o.attempt = n;
    o.evaluated = o.correct = true;
    o.verdict = "correct";
    o.speedup = *d->point == 1 ? 3.0 : 2.7;
    o.point = d->point;
    o.bottleneck = bottleneck;
    p.observe(*d, o);
  }
  return tried;
}

// A space whose second prior point changes two axes at once (wider tile with more warps) and is
// the optimum: the engine's pair intent takes it second, as the prior does.
TEST(Planner, APairMoveFollowsThePriorsWholePointOrder) {
  std::vector<json> pts;
  auto point = [](int tile, int warps) {
    return json{{"k-row", {{"BLOCK_J", tile}, {"num_warps", warps}}}, {"pattern", "row:mean"}};
  };
  pts.push_back(point(32, 4));
  pts.push_back(point(64, 8));  // the optimum, two axes away
  for (int tile : {16, 32, 64, 128})
    for (int warps : {2, 4, 8, 16})
      if (!(tile == 32 && warps == 4) && !(tile == 64 && warps == 8))
        pts.push_back(point(tile, warps));
  search::TemplateSpace space(pts);
  search::Planner p(search::Policy::kEngine, search::SearchParams{}, space, 1, "pair");
  EXPECT_EQ(first_steps(p, 2, ""), (std::vector<size_t>{0, 1}));
  bool pair = false;
  for (const auto& i : p.intents()) pair |= i.action.contains("pair") && i.status == "succeeded";
  EXPECT_TRUE(pair) << "the pair intent is the tree's record of the move";
}

// The H200 RMSNorm case: a reduction tile that comes early on its axis exists only on points the
// proposer ranks low and two axes away (another mode). Under a memory-bound diagnosis, which
// boosts that axis, the engine still takes the prior's second point: a move's prior is the rank
// of the point that would test it, not its value's rank on the axis.
TEST(Planner, AMovesPriorIsTheRankOfThePointThatTestsIt) {
  std::vector<json> pts;
  auto point = [](int tile, int warps, int red, const char* mode) {
    return json{
        {"k-row", {{"BLOCK_J", tile}, {"num_warps", warps}, {"BLOCK_R", red}, {"mode", mode}}},
        {"pattern", "row:mean"}};
  };
  pts.push_back(point(32, 4, 64, "tile"));
  pts.push_back(point(64, 8, 64, "tile"));  // the optimum, two axes away
  pts.push_back(point(64, 4, 8, "loop"));   // BLOCK_R=8 is second on its axis...
  for (int tile : {16, 128})
    for (int warps : {2, 16}) pts.push_back(point(tile, warps, 64, "tile"));
  for (int warps : {2, 8}) pts.push_back(point(32, warps, 32, "loop"));
  pts.push_back(point(32, 4, 8, "loop"));  // ...but its test from the start is ranked last
  search::TemplateSpace space(pts);
  search::SearchParams params;
  params.diagnosis_weight = 1.0;
  search::Planner p(search::Policy::kEngine, params, space, 1, "rank");
  EXPECT_EQ(first_steps(p, 2, "memory"), (std::vector<size_t>{0, 1}));
}

// A wrong two-axis move condemns the value no correct point had, not the one seen correct.
TEST(Planner, AWrongPairMovePrunesOnlyTheNewValue) {
  std::vector<json> pts;
  auto point = [](int tile, bool fast) {
    return json{
        {"k-row", {{"BLOCK_J", tile}}}, {"k-pw", {{"fast_math", fast}}}, {"pattern", "row:mean"}};
  };
  pts.push_back(point(32, false));
  pts.push_back(point(64, false));
  pts.push_back(point(128, true));  // pair from 64: tile 128 (new) and fast_math (new)
  pts.push_back(point(32, true));
  pts.push_back(point(128, false));
  search::TemplateSpace space(pts);
  search::Planner p(search::Policy::kEngine, search::SearchParams{}, space, 1, "wrong");
  auto fm = space.axis_index("k-pw.fast_math");
  ASSERT_TRUE(fm);
  std::vector<size_t> tried;
  for (int n = 1; n <= 5; ++n) {
    auto d = p.next();
    if (!d) break;
    tried.push_back(*d->point);
    search::Observation o;
    o.attempt = n;
    o.evaluated = true;
    o.point = d->point;
    o.correct = space.value(*d->point, *fm) == false;
    o.verdict = o.correct ? "correct" : "incorrect";
    if (o.correct) o.speedup = 1.0 + 0.1 * static_cast<double>(*d->point);
    p.observe(*d, o);
  }
  int wrong = 0;
  for (size_t t : tried) wrong += space.value(t, *fm) == true;
  EXPECT_EQ(wrong, 1) << "fast_math=true must not come back after its wrong answer";
}

TEST(Planner, StagnationChangesDirectionAndIsReported) {
  // A flat landscape: nothing ever improves, so the window runs out.
  search::SearchParams params;
  params.stagnation_window = 2;
  search::Planner p(search::Policy::kEngine, params, search::TemplateSpace(grid()), 1, "flat");
  std::vector<search::Decision> all;
  for (int n = 1; n <= 8; ++n) {
    auto d = p.next();
    ASSERT_TRUE(d);
    search::Observation o;
    o.attempt = n;
    o.evaluated = true;
    o.correct = true;
    o.speedup = 1.0;
    o.point = d->point;
    p.observe(*d, o);
    for (auto& dc : p.take_decisions()) all.push_back(dc);
  }
  int stagnations = 0, chosen = 0;
  for (const auto& d : all) {
    stagnations += d.kind == "stagnation";
    chosen += d.kind == "intent_chosen";
  }
  EXPECT_GE(stagnations, 1);
  EXPECT_EQ(chosen, 8);
  bool jumped = false;
  for (const auto& i : p.intents()) jumped |= i.source == "stagnation";
  EXPECT_TRUE(jumped);
}

TEST(Planner, TheTreeRecordsEvidenceAndExportsAsJson) {
  search::Planner* p = nullptr;
  run(search::Policy::kEngine, 6, 1, &p);
  json j = p->to_json();
  EXPECT_EQ(j["policy"], "engine");
  EXPECT_EQ(j["issued"], 6);
  EXPECT_EQ(j["observed"], 6);
  ASSERT_TRUE(j["intents"].is_array());
  EXPECT_EQ(j["intents"][0]["parent"], nullptr);
  std::set<int> evidence;
  std::map<std::string, int> statuses;
  for (const auto& i : j["intents"]) {
    for (const auto& e : i["evidence"]) evidence.insert(e.get<int>());
    statuses[i["status"].get<std::string>()]++;
    if (i["id"] != 0) {
      EXPECT_TRUE(i["parent"].is_number());
    }
  }
  EXPECT_EQ(evidence, (std::set<int>{1, 2, 3, 4, 5, 6}));  // every attempt tested an intent
  EXPECT_GE(statuses["succeeded"], 1);
  EXPECT_EQ(j["axes"].size(), 3u);
}

TEST(Planner, AModelsIntentsComeFromTheCriticsSuggestions) {
  search::Planner p(search::Policy::kEngine, {}, search::TemplateSpace(), 1, "m");
  auto d1 = p.next();
  ASSERT_TRUE(d1);
  EXPECT_FALSE(d1->point);
  EXPECT_GE(d1->intent, 1);
  search::Observation o;
  o.attempt = 1;
  o.evaluated = true;
  o.correct = true;
  o.speedup = 1.2;
  o.bottleneck = "memory";
  o.suggestions = json::array(
      {{{"action", "vectorise loads"}, {"expected_gain", 0.3}, {"rationale", "wide loads"}},
       {{"action", "fuse the epilogue"}, {"expected_gain", 0.6}, {"rationale", "one pass"}}});
  p.observe(*d1, o);
  auto d2 = p.next();
  ASSERT_TRUE(d2);
  EXPECT_EQ(d2->title, "fuse the epilogue");  // the larger expected gain first
  EXPECT_EQ(d2->rationale, "one pass");
  // Issued while the first is still in flight: a different intent (no double booking).
  auto d3 = p.next();
  ASSERT_TRUE(d3);
  EXPECT_EQ(d3->title, "vectorise loads");
  EXPECT_EQ(p.intents()[static_cast<size_t>(d1->intent)].status, "succeeded");
}

TEST(Planner, BestOfNAsksAModelForFreshSamples) {
  search::Planner p(search::Policy::kBestOfN, {}, search::TemplateSpace(), 1);
  auto d = p.next();
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->fresh);
  EXPECT_EQ(d->intent, -1);
}

TEST(Policy, NamesRoundTrip) {
  for (auto p : {search::Policy::kEngine, search::Policy::kBestOfN, search::Policy::kPrior})
    EXPECT_EQ(search::parse_policy(search::policy_name(p)), p);
  EXPECT_FALSE(search::parse_policy("random"));
}

}  // namespace
