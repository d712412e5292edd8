// The skill library (src/skills): identity and validation, BM25, retrieval and the prior order,
// the prompt section's budget, learning, seeds, export/import/merge round trips, refused files,
// and concurrent learners on one store.
#include <gtest/gtest.h>

#include <thread>

#include "skills/bm25.hpp"
#include "skills/learn.hpp"
#include "skills/library.hpp"
#include "store/store.hpp"
#include "support/temp_dir.hpp"

namespace {

using nlohmann::json;
namespace sk = ok::skills;

const std::filesystem::path kSkillsDir =
    std::filesystem::path(OPENKERNEL_TEST_SOURCE_ROOT) / "data/skills";

sk::Signature row_signature(int log2_last = 12, std::string arch = "sm_90") {
  sk::Signature s;
  s.pattern = "row:softmax";
  s.ops = {"amax", "div", "exp", "sub", "sum"};
  s.log2_elements = 24;
  s.log2_last_dim = log2_last;
  s.dtypes = {"float32"};
  s.backend = "triton";
  s.arch = std::move(arch);
  return s;
}

json point(int block, int warps) {
  return {{"skill", "triton-row"},
          {"pattern", "row:softmax"},
          {"triton-row", {{"mode", "tile"}, {"BLOCK_R", block}, {"num_warps", warps}}}};
}

// A builtin session that tried `points` with `speedups` (0: incorrect).
sk::SessionLesson builtin_session(const std::string& id, const std::vector<json>& points,
                                  const std::vector<double>& speedups) {
  sk::SessionLesson s;
  s.session = id;
  s.problem = "23_Softmax";
  s.hardware = "NVIDIA H200";
  s.signature = row_signature();
  for (size_t i = 0; i < points.size(); ++i) {
    sk::AttemptFact a;
    a.number = static_cast<int>(i) + 1;
    a.correct = speedups[i] > 0;
    if (a.correct) a.speedup = speedups[i];
    a.params = points[i];
    s.attempts.push_back(a);
  }
  s.gains = {"change the warps per program: num_warps=8"};
  return s;
}

json without_time(json doc) {
  doc.erase("exported_at");
  return doc;
}

int count(ok::store::Store& s, const char* table) {
  auto st = s.db().prepare(std::string("SELECT COUNT(*) FROM ") + table);
  return st ? static_cast<int>(*st->step_int()) : -1;
}

TEST(SkillsIdentity, IdHashesWhatTheSkillSaysAndImportChecksIt) {
  sk::Skill a;
  a.kind = "builtin";
  a.provenance = "learned";
  a.signature = row_signature();
  a.action = {{"template", "triton-row"}, {"params", point(1024, 8)}};
  a.id = sk::skill_id(a.kind, a.signature, a.action);
  a.text = "x";
  EXPECT_EQ(a.id.size(), 19u);
  auto back = sk::Skill::from_json(a.to_json());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->to_json(), a.to_json());
  json tampered = a.to_json();
  tampered["action"]["params"]["triton-row"]["num_warps"] = 4;
  auto r = sk::Skill::from_json(tampered);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not the hash"), std::string::npos);
  // A model skill's exemplar is not part of its identity.
  sk::Signature sig = row_signature();
  EXPECT_EQ(sk::skill_id("model", sig, {{"technique", "t"}, {"exemplar", "a"}}),
            sk::skill_id("model", sig, {{"technique", "t"}, {"exemplar", "b"}}));
  EXPECT_DOUBLE_EQ(sk::confidence(0, 0), 0.5);
  EXPECT_DOUBLE_EQ(sk::confidence(3, 1), 4.0 / 6.0);
}

TEST(SkillsBm25, RanksTheDocumentThatSharesRareTerms) {
  sk::Bm25 bm({"softmax over rows of a matrix", "elementwise gelu activation",
               "row reduction sum over a matrix"});
  auto s = bm.score("Softmax rows");
  EXPECT_GT(s[0], s[2]);
  EXPECT_GT(s[2], s[1] - 1e-12);
  EXPECT_DOUBLE_EQ(s[1], 0.0);
  EXPECT_EQ(sk::tokenize("23_Softmax, BLOCK_R=1024"),
            (std::vector<std::string>{"23", "softmax", "block", "r", "1024"}));
}

TEST(SkillsRetrieve, SignatureFirstThenTextAndTheTemplateMustBeOnOffer) {
  auto seeds = sk::seed_skills(kSkillsDir);
  ASSERT_TRUE(seeds) << seeds.error().message;
  std::vector<sk::Skill> library = *seeds;
  auto learned = sk::distil(builtin_session("s1", {point(0, 4), point(1024, 8)}, {1.1, 1.6}));
  ASSERT_TRUE(learned);
  library.push_back(*learned);
  // The same knowledge from another GPU: signature scores lower than on the problem's own.
  sk::SessionLesson other = builtin_session("s2", {point(2048, 16)}, {1.3});
  other.signature = row_signature(12, "sm_80");
  library.push_back(*sk::distil(other));
  sk::RetrieveOptions o;
  o.query = "23_Softmax";
  o.points = {point(0, 4), point(1024, 8), point(2048, 16)};
  auto ranked = sk::retrieve(library, row_signature(), o);
  ASSERT_GE(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].skill.id, learned->id);
  EXPECT_EQ(ranked[1].skill.signature.arch, "sm_80");
  EXPECT_EQ(ranked[2].skill.provenance, "seed");
  for (const auto& r : ranked) {
    EXPECT_EQ(r.skill.signature.backend, "triton");       // builtin skills of other backends never
    EXPECT_EQ(r.skill.action["template"], "triton-row");  // and only templates on offer
  }
  // The prior order puts the learned point first, the other GPU's second.
  auto order = sk::prior_order(o.points, ranked);
  EXPECT_EQ(order, (std::vector<size_t>{1, 2, 0}));
  // On a sibling pattern (log_softmax) the skills are analogies: the proposer's order stands.
  std::vector<json> sibling = o.points;
  for (auto& p : sibling) p["pattern"] = "row:log_softmax";
  EXPECT_EQ(sk::prior_order(sibling, ranked), (std::vector<size_t>{0, 1, 2}));
  // Skills below the confidence floor are not fed.
  sk::Skill weak = *learned;
  for (int i = 0; i < 6; ++i) weak.evidence.push_back({.session = "f", .outcome = "failed"});
  auto weak_ranked = sk::retrieve({weak}, row_signature(), o);
  EXPECT_TRUE(weak_ranked.empty());
}

// The prior order is a vote of the applicable learned skills: the point two of them won on
// comes before the one the top-ranked skill alone won on, and a point sharing parameters with the
// winners before one that shares none.
TEST(SkillsRetrieve, ThePriorOrderIsAVoteOfTheLearnedSkills) {
  const std::vector<json> pts = {point(0, 4), point(1024, 8), point(2048, 16), point(2048, 8)};
  auto skill_for = [&](const std::string& session, const json& p) {
    auto s = sk::distil(builtin_session(session, {p}, {1.5}));
    EXPECT_TRUE(s);
    return *s;
  };
  // Three sessions: one won at point 1, two at point 2 (one skill, its evidence twice).
  sk::Skill lone = skill_for("a", pts[1]);
  sk::Skill agreed = skill_for("b", pts[2]);
  agreed.evidence.push_back({.session = "c", .role = "source", .outcome = "helped"});
  // Ranked with the lone skill first (as a name's words could put it).
  std::vector<sk::RankedSkill> ranked = {{lone, 10, 2, 0}, {agreed, 10, 1, 1}};
  auto order = sk::prior_order(pts, ranked);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0], 2u);  // two sessions agree
  EXPECT_EQ(order[1], 1u);
  EXPECT_EQ(order[2], 3u);  // shares BLOCK_R=2048 and mode with the agreed winner
  EXPECT_EQ(order[3], 0u);
  // A skill whose signature fits worse counts for less: the lone winner on the problem's own
  // hardware outranks two agreeing sessions elsewhere whose signature scores half.
  ranked[1].signature_score = 5;
  EXPECT_EQ(sk::prior_order(pts, ranked)[0], 1u);
}

// A model skill with `technique`, for re-ranking.
sk::RankedSkill model_skill(const std::string& title, const std::string& technique, int rank) {
  sk::Skill s;
  s.kind = "model";
  s.provenance = "learned";
  s.signature = row_signature();
  s.title = title;
  s.action = {{"technique", technique}, {"exemplar", "class ModelNew: pass"}};
  s.id = sk::skill_id(s.kind, s.signature, s.action);
  return {s, 10.0, 1.0, rank};
}

TEST(SkillsRetrieve, EachGenerationReranksTheFedSkillsByWhatTheSessionLearnt) {
  const std::vector<sk::RankedSkill> fed = {
      model_skill("tensor cores for the matmul", "use tl.dot with bf16 inputs: compute bound", 0),
      model_skill("coalesced vectorised loads",
                  "load rows with contiguous, vectorised accesses "
                  "so that memory bandwidth is saturated",
                  1),
      model_skill("one program per row", "launch one program per row with a power of two block",
                  2)};
  auto ids = [](const std::vector<sk::RankedSkill>& r) {
    std::vector<std::string> out;
    for (const auto& x : r) out.push_back(x.skill.title);
    return out;
  };
  // Nothing learnt yet (or nothing shared): the session-start order stands.
  EXPECT_EQ(ids(sk::rerank(fed, "")), ids(fed));
  EXPECT_EQ(ids(sk::rerank(fed, "zzz qqq")), ids(fed));
  // A memory-bound diagnosis puts the memory skill first; a compute-bound one the tensor cores.
  auto memory = sk::rerank(fed, "memory bandwidth: loads are not coalesced; vectorised loads");
  EXPECT_EQ(memory[0].skill.title, "coalesced vectorised loads");
  auto compute = sk::rerank(fed, "compute bound: the matmul should use tensor cores (tl.dot)");
  EXPECT_EQ(compute[0].skill.title, "tensor cores for the matmul");
  EXPECT_NE(ids(memory), ids(compute));
  // Ranks are renumbered, the retrieval scores kept, the order deterministic.
  for (size_t i = 0; i < memory.size(); ++i) {
    EXPECT_EQ(memory[i].rank, static_cast<int>(i));
    EXPECT_DOUBLE_EQ(memory[i].signature_score, 10.0);
  }
  EXPECT_EQ(ids(sk::rerank(fed, "memory bandwidth coalesced")),
            ids(sk::rerank(fed, "memory bandwidth coalesced")));
}

TEST(SkillsRetrieve, SignatureOfAProblemFromGraphInspectionAndDevice) {
  json graph = {{"traceable", true},
                {"inputs", {{{"name", "x"}, {"shape", {4096, 4096}}, {"dtype", "float32"}}}},
                {"nodes", {{{"op", "exp"}}, {{"op", "sum"}}, {{"op", "exp"}}}}};
  json device = {{"kind", "cuda"}, {"name", "NVIDIA H200"}, {"compute_capability", "9.0"}};
  auto s = sk::signature_of(graph, json(), device, "triton", {point(0, 4)});
  EXPECT_EQ(s.pattern, "row:softmax");
  EXPECT_EQ(s.ops, (std::vector<std::string>{"exp", "sum"}));
  EXPECT_EQ(s.log2_elements, 24);
  EXPECT_EQ(s.log2_last_dim, 12);
  EXPECT_EQ(s.arch, "sm_90");
  auto m = sk::signature_of(graph, json(), json{{"kind", "cpu"}}, "cpu", {});
  EXPECT_EQ(m.pattern, "ops:exp+sum");
  EXPECT_EQ(m.arch, "cpu");
}

TEST(SkillsPrompt, SectionStaysWithinItsBudgetAndCutsTheExemplar) {
  sk::SessionLesson s = builtin_session("m1", {point(0, 4)}, {2.5});
  s.builtin = false;
  s.attempts[0].description = "one program per row with the row held in registers";
  s.attempts[0].source = "import torch\n@triton.jit\ndef k(x):\n" + std::string(3000, '#') + "\n";
  auto k = sk::distil(s);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, "model");
  EXPECT_EQ(k->action["exemplar"].get<std::string>().rfind("@triton.jit", 0), 0u);
  std::vector<sk::RankedSkill> ranked = {{*k, 10, 1, 0}};
  for (size_t budget : {0, 100, 400, 900, 5000}) {
    std::string section = sk::prompt_section(ranked, budget);
    EXPECT_LE(section.size(), budget);
    if (budget >= 900) EXPECT_NE(section.find("one program per row"), std::string::npos);
  }
  EXPECT_NE(sk::prompt_section(ranked, 5000).find("exemplar:"), std::string::npos);
}

TEST(SkillsLearn, OutcomesFollowTheRules) {
  auto seeds = sk::seed_skills(kSkillsDir);
  ASSERT_TRUE(seeds);
  sk::Skill named = *sk::distil(builtin_session("a", {point(1024, 8)}, {1.6}));
  // Its point within 2% of the best: helped; far below: failed; incorrect: failed; untried:
  // neutral.
  EXPECT_EQ(sk::outcome_of(named, builtin_session("b", {point(1024, 8), point(0, 4)}, {1.6, 1.62})),
            "helped");
  EXPECT_EQ(sk::outcome_of(named, builtin_session("c", {point(1024, 8), point(0, 4)}, {1.0, 2.0})),
            "failed");
  EXPECT_EQ(sk::outcome_of(named, builtin_session("d", {point(1024, 8)}, {0})), "failed");
  EXPECT_EQ(sk::outcome_of(named, builtin_session("e", {point(0, 4)}, {1.2})), "neutral");
  EXPECT_FALSE(sk::distil(builtin_session("f", {point(0, 4)}, {0})));
}

class SkillsStore : public ::testing::Test {
 protected:
  ok::testing::TempDir dir_{"ok-skills"};
  ok::store::Store open(const std::string& name) {
    auto s = ok::store::Store::open(dir_.path() / name);
    EXPECT_TRUE(s) << s.error().message;
    return std::move(*s);
  }
};

TEST_F(SkillsStore, SeedsOnceAndAPrunedSeedStaysPruned) {
  auto st = open("a.db");
  auto first = sk::ensure_seeds(st, kSkillsDir);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_GE(*first, 6);
  EXPECT_EQ(*sk::ensure_seeds(st, kSkillsDir), 0);
  auto all = sk::load(st);
  ASSERT_TRUE(all);
  for (const auto& s : *all) EXPECT_EQ(s.provenance, "seed");
  ASSERT_TRUE(st.delete_skills({all->front().id}));
  EXPECT_EQ(*sk::ensure_seeds(st, kSkillsDir), 0);
  EXPECT_EQ(sk::load(st)->size(), all->size() - 1);
}

TEST_F(SkillsStore, RepeatedSuccessRaisesConfidenceAndFailureLowersIt) {
  auto st = open("a.db");
  auto one = sk::learn(st, builtin_session("s1", {point(0, 4), point(1024, 8)}, {1.1, 1.6}));
  ASSERT_TRUE(one) << one.error().message;
  ASSERT_TRUE(one->learned && one->learned_new);
  const std::string id = one->learned->id;
  double c1 = sk::find(st, id)->confidence();
  auto two = sk::learn(st, builtin_session("s2", {point(1024, 8)}, {1.7}));
  ASSERT_TRUE(two);
  EXPECT_FALSE(two->learned_new);  // the same skill: its evidence grows
  double c2 = sk::find(st, id)->confidence();
  EXPECT_GT(c2, c1);
  sk::SessionLesson bad = builtin_session("s3", {point(1024, 8), point(0, 4)}, {0.9, 2.0});
  bad.used = {{*sk::find(st, id), 9, 1, 0}};
  ASSERT_TRUE(sk::learn(st, bad));
  EXPECT_LT(sk::find(st, id)->confidence(), c2);
  auto prefix = sk::find(st, id.substr(0, 8));
  ASSERT_TRUE(prefix);
  EXPECT_EQ(prefix->id, id);
}

TEST_F(SkillsStore, ExportImportRoundTripWithoutLoss) {
  auto a = open("a.db");
  ASSERT_TRUE(sk::ensure_seeds(a, kSkillsDir));
  ASSERT_TRUE(sk::learn(a, builtin_session("s1", {point(0, 4), point(1024, 8)}, {1.1, 1.6})));
  auto ranked = sk::retrieve(*sk::load(a), row_signature(), {.points = {point(1024, 8)}});
  ASSERT_TRUE(sk::record_uses(a, "s2", ranked, "NVIDIA H200"));
  json exported = sk::export_json(*sk::load(a));
  EXPECT_EQ(exported["format"], "openkernel-skills");
  EXPECT_EQ(exported["version"], 1);
  auto b = open("b.db");
  auto rep = sk::import_json(b, json::parse(exported.dump()));
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_EQ(rep->added, static_cast<int>(exported["skills"].size()));
  EXPECT_EQ(without_time(sk::export_json(*sk::load(b))), without_time(exported));
  // Importing again changes nothing.
  ASSERT_TRUE(sk::import_json(b, exported));
  EXPECT_EQ(without_time(sk::export_json(*sk::load(b))), without_time(exported));
}

TEST_F(SkillsStore, MergeSessionsBringsSkillsAndTheirEvidence) {
  auto a = open("a.db");
  auto b = open("b.db");
  ASSERT_TRUE(sk::learn(a, builtin_session("s1", {point(1024, 8)}, {1.6})));
  ASSERT_TRUE(sk::learn(b, builtin_session("s2", {point(1024, 8)}, {1.7})));
  ASSERT_TRUE(sk::learn(b, builtin_session("s3", {point(2048, 8)}, {1.2})));
  auto merged = a.merge_sessions(dir_.path() / "b.db");
  ASSERT_TRUE(merged) << merged.error().message;
  auto all = sk::load(a);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  size_t evidence = 0;
  for (const auto& s : *all) evidence += s.evidence.size();
  EXPECT_EQ(evidence, 3u);
  ASSERT_TRUE(a.merge_sessions(dir_.path() / "b.db"));  // again: nothing doubles
  EXPECT_EQ(count(a, "skill_evidence"), 3);
}

TEST_F(SkillsStore, BadFilesAreRefusedAndTheStoreIsUnchanged) {
  auto a = open("a.db");
  ASSERT_TRUE(sk::ensure_seeds(a, kSkillsDir));
  json good = sk::export_json(*sk::load(a));
  auto b = open("b.db");
  ASSERT_TRUE(sk::learn(b, builtin_session("s1", {point(1024, 8)}, {1.6})));
  const int skills = count(b, "skills"), evidence = count(b, "skill_evidence");
  json foreign = good;
  foreign["version"] = 2;
  json not_ours = good;
  not_ours["format"] = "something-else";
  json broken_last = good;  // valid skills first, one bad at the end: none may be added
  broken_last["skills"].push_back({{"id", "sk-0"}, {"kind", "builtin"}});
  json bad_evidence = good;
  bad_evidence["skills"][0]["evidence"] = {
      {{"session", "x"}, {"role", "r"}, {"outcome", "helped"}}};
  for (const auto& [doc, needle] : std::vector<std::pair<json, std::string>>{
           {foreign, "version 2"},
           {not_ours, "not a skills file"},
           {json::array(), "not a JSON object"},
           {broken_last, "skill " + std::to_string(good["skills"].size() + 1)},
           {bad_evidence, "role r"}}) {
    auto r = sk::import_json(b, doc);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, ok::util::ErrorKind::kBadInput);
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
    EXPECT_EQ(count(b, "skills"), skills);
    EXPECT_EQ(count(b, "skill_evidence"), evidence);
  }
}

TEST_F(SkillsStore, ConcurrentLearnersLoseNoUpdate) {
  { auto init = open("shared.db"); }
  constexpr int kSessions = 15;
  auto learner = [&](const std::string& prefix) {
    auto s = ok::store::Store::open(dir_.path() / "shared.db");
    ASSERT_TRUE(s);
    for (int i = 0; i < kSessions; ++i) {
      auto r = sk::learn(*s, builtin_session(prefix + std::to_string(i), {point(1024, 8)}, {1.5}));
      ASSERT_TRUE(r) << r.error().message;
    }
  };
  std::thread t1(learner, "a"), t2(learner, "b");
  t1.join();
  t2.join();
  auto st = open("shared.db");
  auto all = sk::load(st);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(all->front().helped(), 2 * kSessions);
}

}  // namespace
