// The world model's seeded intents (docs/skills.md, "The world model's seeded intents"): the
// skills retrieved at a session's start enter the intent tree under the root, marked with their
// skill id and confidence; the engine starts from one naming its first point and turns to the
// others before a random distant jump; every policy credits them with the evaluation of the
// point they name; the session's end records the skill's outcome on them.
#include <gtest/gtest.h>

#include <algorithm>

#include "search/space.hpp"
#include "search/world_model.hpp"

namespace {

using nlohmann::json;
namespace search = ok::search;

// 24 points of one skill, in the proposer's order (rank sum of a, b, c).
std::vector<json> points() {
  std::vector<json> pts;
  for (int s = 0; s <= 6; ++s)
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 4; ++b)
        for (int c = 0; c < 2; ++c)
          if (a + b + c == s)
            pts.push_back({{"k-gemm", {{"BM", 64 >> a}, {"BN", 128 >> b}, {"order", c}}},
                           {"skill", "k-gemm"},
                           {"pattern", "gemm"}});
  return pts;
}

search::Observation flat(const search::Direction& d, int n, double speedup = 1.0) {
  search::Observation o;
  o.attempt = n;
  o.evaluated = true;
  o.correct = true;
  o.speedup = speedup;
  o.point = d.point;
  return o;
}

const search::Intent* seeded(const search::Planner& p, const std::string& skill) {
  for (const auto& i : p.intents())
    if (i.source == "skill" && i.action.value("skill", std::string()) == skill) return &i;
  return nullptr;
}

TEST(SeededIntents, AreMarkedWithTheirSkillAndConfidence) {
  search::Planner p(search::Policy::kEngine, {}, search::TemplateSpace(points()), 1, "g");
  p.seed({{.skill = "sk-a", .title = "A", .confidence = 0.75, .rank = 0, .point = 0},
          {.skill = "sk-b", .title = "B", .confidence = 0.5, .rank = 1, .point = std::nullopt}});
  const json tree = p.to_json()["intents"];
  ASSERT_EQ(tree.size(), 3u);  // the root and the two skills
  EXPECT_EQ(tree[1]["source"], "skill");
  EXPECT_EQ(tree[1]["parent"], 0);
  EXPECT_EQ(tree[1]["action"]["skill"], "sk-a");
  EXPECT_EQ(tree[1]["action"]["point"], 0);
  EXPECT_DOUBLE_EQ(tree[1]["confidence"].get<double>(), 0.75);
  EXPECT_EQ(tree[1]["status"], "open");
  EXPECT_NE(tree[1]["title"].get<std::string>().find("A"), std::string::npos);
  // A builtin skill naming no point of this problem is shown, settled as pruned.
  EXPECT_EQ(tree[2]["status"], "pruned");
  EXPECT_FALSE(tree[2]["action"].contains("point"));
}

TEST(SeededIntents, TheEngineStartsFromTheSkillNamingItsFirstPoint) {
  search::Planner p(search::Policy::kEngine, {}, search::TemplateSpace(points()), 1, "g");
  p.seed({{.skill = "sk-a", .title = "A", .confidence = 0.75, .rank = 0, .point = 0}});
  auto d = p.next();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->point, std::optional<size_t>(0));
  const search::Intent* s = seeded(p, "sk-a");
  ASSERT_TRUE(s);
  EXPECT_EQ(d->intent, s->id);
  p.observe(*d, flat(*d, 1, 1.3));
  s = seeded(p, "sk-a");
  EXPECT_EQ(s->status, "succeeded");
  EXPECT_EQ(s->evidence, std::vector<int>{1});
  // It is the base: the next hypotheses refine it.
  const int seed_id = s->id;  // s points into the intents, which next() may reallocate
  EXPECT_EQ(p.to_json()["base"], seed_id);
  auto d2 = p.next();
  ASSERT_TRUE(d2);
  EXPECT_EQ(p.intents()[static_cast<size_t>(d2->intent)].parent, seed_id);
}

TEST(SeededIntents, StagnationTurnsToAnUntriedSkillPointBeforeARandomJump) {
  search::SearchParams params;
  params.stagnation_window = 2;
  const size_t far = points().size() - 1;  // the proposer's last point
  search::Planner p(search::Policy::kEngine, params, search::TemplateSpace(points()), 1, "g");
  p.seed({{.skill = "sk-far", .title = "far", .confidence = 0.6, .rank = 0, .point = far}});
  std::vector<size_t> tried;
  for (int n = 1; n <= 6; ++n) {
    auto d = p.next();
    ASSERT_TRUE(d);
    tried.push_back(*d->point);
    p.observe(*d, flat(*d, n));  // nothing ever improves
  }
  auto at = std::find(tried.begin(), tried.end(), far);
  ASSERT_NE(at, tried.end()) << "the skill's point should be the change of direction";
  const int far_attempt = static_cast<int>(at - tried.begin()) + 1;
  EXPECT_LE(far_attempt, 4);  // the first change of direction (after 1 + 2 evaluations)
  const search::Intent* s = seeded(p, "sk-far");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->evidence, std::vector<int>{far_attempt});
  // No random distant jump was taken before it.
  for (const auto& i : p.intents())
    if (i.source == "stagnation")
      for (int e : i.evidence) EXPECT_GT(e, far_attempt);
}

TEST(SeededIntents, EveryPolicyCreditsTheSkillWithItsPointsEvaluation) {
  for (auto policy : {search::Policy::kPrior, search::Policy::kBestOfN}) {
    search::Planner p(policy, {}, search::TemplateSpace(points()), 1, "g");
    p.seed({{.skill = "sk-a", .title = "A", .confidence = 0.5, .rank = 0, .point = 1}});
    const size_t n = points().size();
    bool credited = false;
    for (int k = 1; k <= static_cast<int>(n) && !credited; ++k) {
      auto d = p.next();
      ASSERT_TRUE(d);
      // The skill's point is the fastest: it succeeds; others are slower.
      p.observe(*d, flat(*d, k, *d->point == 1 ? 2.0 : 1.0));
      if (*d->point == 1) {
        const search::Intent* s = seeded(p, "sk-a");
        EXPECT_EQ(s->status, "succeeded") << search::policy_name(policy);
        EXPECT_EQ(s->evidence, std::vector<int>{k});
        credited = true;
      }
    }
    EXPECT_TRUE(credited);
  }
  // An incorrect point fails its skill's intent with the verdict.
  search::Planner p(search::Policy::kPrior, {}, search::TemplateSpace(points()), 1, "g");
  p.seed({{.skill = "sk-a", .title = "A", .confidence = 0.5, .rank = 0, .point = 0}});
  auto d = p.next();
  auto o = flat(*d, 1);
  o.correct = false;
  o.speedup.reset();
  o.verdict = "incorrect";
  p.observe(*d, o);
  EXPECT_EQ(seeded(p, "sk-a")->status, "failed");
  EXPECT_EQ(seeded(p, "sk-a")->note, "incorrect");
}

TEST(SeededIntents, TheSessionsEndRecordsTheSkillsOutcome) {
  search::Planner p(search::Policy::kPrior, {}, search::TemplateSpace(points()), 1, "g");
  p.seed({{.skill = "sk-a", .title = "A", .confidence = 0.5, .rank = 0, .point = 0},
          {.skill = "sk-b", .title = "B", .confidence = 0.5, .rank = 1, .point = 5}});
  auto d = p.next();
  p.observe(*d, flat(*d, 1, 1.5));
  p.settle_skill("sk-a", "helped");
  p.settle_skill("sk-b", "neutral");
  const json tree = p.to_json()["intents"];
  EXPECT_EQ(tree[1]["action"]["outcome"], "helped");
  EXPECT_NE(tree[1]["note"].get<std::string>().find("skill helped"), std::string::npos);
  EXPECT_EQ(tree[2]["action"]["outcome"], "neutral");
  EXPECT_EQ(tree[2]["status"], "open");  // never evaluated
  EXPECT_EQ(tree[2]["note"], "skill neutral");
}

TEST(SeededIntents, AModelsSeededTechniqueIsAHypothesisWithItsTechnique) {
  search::Planner p(search::Policy::kEngine, {}, search::TemplateSpace(), 1, "m");
  p.seed({{.skill = "sk-m",
           .title = "fused loop",
           .confidence = 0.8,
           .rank = 0,
           .technique = "one fused OpenMP loop over the tensor"}});
  auto d1 = p.next();
  ASSERT_TRUE(d1);
  EXPECT_EQ(d1->title, "a first correct, fused kernel");  // the first attempt is unchanged
  p.observe(*d1, flat(*d1, 1, 1.1));
  auto d2 = p.next();  // the only open hypothesis: the skill's technique
  ASSERT_TRUE(d2);
  const search::Intent* s = seeded(p, "sk-m");
  ASSERT_TRUE(s);
  EXPECT_EQ(d2->intent, s->id);
  EXPECT_NE(d2->rationale.find("one fused OpenMP loop"), std::string::npos);
  EXPECT_EQ(s->action["suggestion"], "one fused OpenMP loop over the tensor");
}

TEST(SeededIntents, WithoutSeedsTheSearchIsUnchanged) {
  auto run = [](bool with_empty_seed) {
    search::Planner p(search::Policy::kEngine, {}, search::TemplateSpace(points()), 7, "g");
    if (with_empty_seed) p.seed({});
    std::vector<size_t> tried;
    for (int n = 1; n <= 10; ++n) {
      auto d = p.next();
      if (!d) break;
      tried.push_back(*d->point);
      p.observe(*d, flat(*d, n, 1.0 + 0.01 * static_cast<double>(*d->point % 5)));
    }
    return tried;
  };
  EXPECT_EQ(run(false), run(true));
}

}  // namespace
