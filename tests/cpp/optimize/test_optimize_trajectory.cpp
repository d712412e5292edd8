// Trajectory memory and prompt budgets (optimize/trajectory.hpp, optimize/prompt_budget.hpp):
// fit_sections' rules, the summariser's sections over long, empty, all-failed and huge-kernel
// histories rendered through the shipped generator template, and failure classes.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "optimize/prompt_budget.hpp"
#include "optimize/prompts.hpp"
#include "optimize/trajectory.hpp"
#include "skills/retrieve.hpp"

namespace {

using nlohmann::json;
namespace opt = ok::optimize;

const std::filesystem::path kRoot = OPENKERNEL_TEST_SOURCE_ROOT;

// A measure that counts the characters of a context's "text".
size_t text_size(const json& ctx) {
  return ctx.value("text", std::string()).size();
}

opt::PromptSection section(std::string name, std::vector<size_t> sizes, size_t budget,
                           int priority) {
  opt::PromptSection s{std::move(name), {}, budget, priority};
  for (size_t n : sizes) s.variants.push_back({{"text", std::string(n, 'x')}});
  return s;
}

TEST(FitSections, EachTakesItsFullestRenderingWithinItsBudget) {
  auto f = opt::fit_sections({section("a", {500, 300, 100}, 350, 0), section("b", {50}, 100, 1),
                              section("none", {}, 100, 0)},
                             10'000, text_size);
  ASSERT_EQ(f.sections.size(), 3u);
  EXPECT_EQ(f.sections[0].variant, 1u);
  EXPECT_EQ(f.sections[0].chars, 300u);
  EXPECT_EQ(f.sections[1].variant, 0u);
  EXPECT_EQ(f.sections[2].chars, 0u);
  EXPECT_TRUE(f.sections[2].context.empty());
  EXPECT_EQ(f.chars, 350u);
  EXPECT_FALSE(f.over_budget);
  json ctx = json::object();
  f.merge_into(ctx);
  EXPECT_EQ(ctx["text"].get<std::string>().size(), 50u);  // the later section wins a shared key
}

TEST(FitSections, OverTheTotalTheLowestPriorityStepsDownFirst) {
  auto f = opt::fit_sections(
      {section("keep", {400, 100}, 500, 3), section("trim", {400, 200, 10}, 500, 0)}, 650,
      text_size);
  // 800 > 650: "trim" gives up 200 first (600 fits), "keep" stays in full.
  EXPECT_EQ(f.sections[0].variant, 0u);
  EXPECT_EQ(f.sections[1].variant, 1u);
  EXPECT_EQ(f.chars, 600u);
  EXPECT_FALSE(f.over_budget);
  // Tighter: "trim" reaches its last rendering, then "keep" steps down.
  f = opt::fit_sections(
      {section("keep", {400, 100}, 500, 3), section("trim", {400, 200, 10}, 500, 0)}, 150,
      text_size);
  EXPECT_EQ(f.sections[1].variant, 2u);
  EXPECT_EQ(f.sections[0].variant, 1u);
  EXPECT_EQ(f.chars, 110u);
  // Impossible: said so, never silently.
  f = opt::fit_sections({section("keep", {400, 100}, 50, 3)}, 20, text_size);
  EXPECT_TRUE(f.over_budget);
  EXPECT_TRUE(f.sections[0].over_budget);
  EXPECT_EQ(f.summary()["sections"][0]["over_budget"], true);
  EXPECT_EQ(f.summary()["estimated_tokens"], 25);  // 100 characters / 4
}

TEST(PromptBudgets, ScaleInProportionAndCountCharactersFourToAToken) {
  opt::PromptBudgets b;
  auto half = b.scaled_to(b.total / 2);
  EXPECT_EQ(half.total, b.total / 2);
  EXPECT_EQ(half.recent, b.recent / 2);
  EXPECT_EQ(half.recent_attempts, b.recent_attempts);
  EXPECT_EQ(opt::PromptBudgets::chars(100), 400u);
  EXPECT_EQ(opt::estimated_tokens(401), 101u);
  EXPECT_EQ(opt::estimated_tokens(0), 0u);
}

TEST(FailureClass, NamesTheExceptionOrTheErrorLineWithNumbersAndPathsNormalised) {
  opt::Attempt a;
  a.verdict = "runtime_error";
  a.error =
      "Traceback (most recent call last):\n  File \"/tmp/x/attempt_003.py\", line 12, in f\n"
      "    raise ValueError(3)\nNameError: name 'tl' is not defined\n";
  EXPECT_EQ(opt::failure_class(a), "NameError: name 'tl' is not defined");
  a.verdict = "incorrect";
  a.error = "trial 1: max abs error 3.5 at index 17";
  opt::Attempt b = a;
  b.error = "trial 4: max abs error 0.25 at index 1024";
  EXPECT_EQ(opt::failure_class(a), opt::failure_class(b));
  EXPECT_EQ(opt::failure_class(a), "trial N: max abs error N at index N");
  a.verdict = "compile_error";
  a.error = "building\n/tmp/build/k.cpp:12:5: error: 'foo' was not declared in this scope";
  EXPECT_EQ(opt::failure_class(a), "<path>:N:N: error: 'foo' was not declared in this scope");
  a.verdict = "rejected";
  a.summary = {{"flags", json::array({"fallback", json{{"name", "excessive_speedup"}}})}};
  EXPECT_EQ(opt::failure_class(a), "flags: excessive_speedup, fallback");
  a = {};
  a.verdict = "timeout";
  EXPECT_EQ(opt::failure_class(a), "(no message)");
  EXPECT_TRUE(opt::is_failure(a));
  a.verdict = "not_evaluated";
  EXPECT_FALSE(opt::is_failure(a));
}

// What a long model session leaves behind: four kinds of failure, repeated ideas, a best kernel.
std::vector<opt::Attempt> long_history(int n, std::map<int, std::string>& sources) {
  const std::vector<std::pair<std::string, std::string>> failures = {
      {"compile_error", "error: identifier \"tile_%\" is undefined"},
      {"incorrect", "trial 2: max abs error 0.%1 at index 7%"},
      {"runtime_error", "Traceback:\n  File \"/x/a.py\", line 3\nRuntimeError: CUDA error %"},
      {"generation_failed", "malformed model reply: no Python code block defining class ModelNew"},
      {"timeout", "timed out after 60 s"}};
  std::vector<opt::Attempt> out;
  for (int i = 1; i <= n; ++i) {
    opt::Attempt a;
    a.number = i;
    a.path = "/nonexistent/attempt_" + std::to_string(i) + ".py";
    a.description = "idea " + std::to_string(i % 7) + ": vectorise by " + std::to_string(i % 7);
    a.params = {{"intent", {{"id", i % 9}, {"title", "intent " + std::to_string(i % 9)}}}};
    if (i % 3 == 0) {
      a.verdict = "correct";
      a.correct = true;
      a.speedup = 1.0 + (i == 18 ? 2.0 : 0.01 * i);
      a.runtime_us = 100.0 / *a.speedup;
    } else {
      const auto& [v, e] = failures[static_cast<size_t>(i) % failures.size()];
      a.verdict = v;
      a.error = e;
      for (auto pos = a.error.find('%'); pos != std::string::npos; pos = a.error.find('%'))
        a.error.replace(pos, 1, std::to_string(i));
    }
    a.diagnosis = {
        {"bottleneck", a.correct ? "memory" : "correctness"},
        {"evidence", json::array({std::string(500, 'e'), "measured " + std::to_string(i)})},
        {"suggestions",
         json::array({{{"action", "try tile " + std::to_string(i)}, {"expected_gain", 0.3}}})}};
    std::string code = "import torch\nclass ModelNew(torch.nn.Module):\n";
    for (int l = 0; l < 120; ++l)
      code += "    # line " + std::to_string(l) + " of " + std::to_string(i) + "\n";
    sources[i] = code;
    out.push_back(std::move(a));
  }
  return out;
}

struct Rendered {
  std::string text;
  opt::FittedPrompt fitted;
};

// The generator template rendered with the fitted memory and, given a library, its skill section.
Rendered render_memory(const std::vector<opt::Attempt>& history,
                       const std::map<int, std::string>& sources, const opt::PromptBudgets& b,
                       const std::vector<ok::skills::RankedSkill>& library = {}) {
  auto t = opt::load_template(kRoot / "data/prompts", "generator");
  EXPECT_TRUE(t) << t.error().message;
  auto measure = opt::template_measure(*t);
  Rendered r;
  r.fitted =
      opt::fit_trajectory(history, sources, b, measure, {opt::skills_section(library, b, measure)});
  json ctx = {{"name", "p"}, {"backend", "cpu"}, {"backend_cpu", true}};
  r.fitted.merge_into(ctx);
  auto text = opt::render(*t, ctx);
  EXPECT_TRUE(text) << text.error().message;
  r.text = text ? *text : "";
  return r;
}

void expect_within_budgets(const opt::FittedPrompt& f) {
  EXPECT_FALSE(f.over_budget) << f.summary().dump(2);
  EXPECT_LE(f.chars, f.budget_chars);
  for (const auto& s : f.sections) EXPECT_LE(s.chars, s.budget_chars) << s.name;
}

void expect_names_what_matters(const std::vector<opt::Attempt>& history, const std::string& text,
                               size_t recent) {
  const opt::Attempt* best = opt::best_attempt(history);
  if (best)
    EXPECT_NE(text.find(fmt::format("best correct kernel so far (attempt {}, {:.3f}x", best->number,
                                    *best->speedup)),
              std::string::npos);
  for (size_t i = history.size() - recent; i < history.size(); ++i)
    EXPECT_NE(text.find(fmt::format("attempt {}: {}", history[i].number, history[i].verdict)),
              std::string::npos)
        << history[i].number;
  for (const auto& a : history) {
    if (!opt::is_failure(a)) continue;
    // Every class is named, however compact its line: its first 40 characters, or (the tightest
    // form cuts the middle, so classes sharing a head stay apart) its head and its tail.
    const std::string label = a.verdict + ": " + opt::failure_class(a);
    const bool head40 = text.find("- " + label.substr(0, 40)) != std::string::npos;
    const bool ends = text.find("- " + label.substr(0, 12)) != std::string::npos &&
                      text.find(label.substr(label.size() - std::min<size_t>(label.size(), 8)) +
                                " x") != std::string::npos;
    EXPECT_TRUE(head40 || ends) << label;
  }
}

TEST(Trajectory, FortyAttemptsStayWithinBudgetAndNameBestRecentAndEveryFailureClass) {
  std::map<int, std::string> sources;
  auto history = long_history(40, sources);
  opt::PromptBudgets b;
  auto r = render_memory(history, sources, b);
  expect_within_budgets(r.fitted);
  expect_names_what_matters(history, r.text, b.recent_attempts);
  EXPECT_NE(r.text.find("# Earlier ideas"), std::string::npos);
  EXPECT_NE(r.text.find("intent 8"), std::string::npos);          // an earlier idea, by its intent
  EXPECT_NE(r.text.find("# line 0 of 18\n"), std::string::npos);  // the best kernel's code
  // A fifth of the budget: the recent attempts are demoted and the code cut, but the best
  // kernel's identity, the last attempts and every failure class are still there.
  auto small = b.scaled_to(b.total / 5);
  r = render_memory(history, sources, small);
  expect_within_budgets(r.fitted);
  expect_names_what_matters(history, r.text, small.recent_attempts);
}

TEST(Trajectory, TheSameHistoryGivesTheSameText) {
  std::map<int, std::string> sources;
  auto history = long_history(23, sources);
  auto a = render_memory(history, sources, {});
  auto b = render_memory(history, sources, {});
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.fitted.summary(), b.fitted.summary());
}

TEST(Trajectory, NoAttemptsSaysNothing) {
  auto sections = opt::trajectory_sections({}, {}, {}, text_size);
  for (const auto& s : sections) EXPECT_TRUE(s.variants.empty()) << s.name;
  auto r = render_memory({}, {}, {});
  EXPECT_EQ(r.fitted.chars, 0u);
  EXPECT_EQ(r.text.find("Previous attempts"), std::string::npos);
  EXPECT_EQ(r.text.find("best correct kernel"), std::string::npos);
}

TEST(Trajectory, AllFailedListsEveryClassAndNoBest) {
  std::map<int, std::string> sources;
  auto history = long_history(40, sources);
  for (auto& a : history)
    if (a.correct) {
      a.correct = false;
      a.verdict = "rejected";
      a.speedup.reset();
      a.summary = {{"flags", json::array({"fallback_" + std::to_string(a.number % 2)})}};
    }
  auto r = render_memory(history, sources, {});
  expect_within_budgets(r.fitted);
  EXPECT_EQ(r.text.find("best correct kernel"), std::string::npos);
  EXPECT_NE(r.text.find("- rejected: flags: fallback_0 x"), std::string::npos);
  EXPECT_NE(r.text.find("- rejected: flags: fallback_1 x"), std::string::npos);
  expect_names_what_matters(history, r.text, 4);
}

// Attempt 1, correct at `speedup`.
opt::Attempt first_correct(double speedup, std::string description) {
  opt::Attempt a;
  a.number = 1;
  a.verdict = "correct";
  a.correct = true;
  a.speedup = speedup;
  a.description = std::move(description);
  return a;
}

TEST(Trajectory, AKernelLargerThanItsBudgetIsCutButKeepsItsIdentity) {
  opt::Attempt a = first_correct(1.25, "one huge kernel");
  a.runtime_us = 80;
  std::map<int, std::string> sources = {
      {1, "HEAD_OF_KERNEL\n" + std::string(200'000, 'k') + "\nTAIL_OF_KERNEL\n"}};
  opt::PromptBudgets b;
  auto r = render_memory({a}, sources, b);
  expect_within_budgets(r.fitted);
  EXPECT_NE(r.text.find("best correct kernel so far (attempt 1, 1.250x, 80.0 us): one huge kernel"),
            std::string::npos);
  EXPECT_NE(r.text.find("HEAD_OF_KERNEL"), std::string::npos);
  EXPECT_NE(r.text.find("TAIL_OF_KERNEL"), std::string::npos);
  EXPECT_NE(r.text.find("characters cut"), std::string::npos);
  // With a budget too small for any code, the identity alone.
  b.best = 60;
  r = render_memory({a}, sources, b);
  expect_within_budgets(r.fitted);
  EXPECT_EQ(r.text.find("HEAD_OF_KERNEL"), std::string::npos);
  EXPECT_NE(r.text.find("(attempt 1, 1.250x"), std::string::npos);
}

// The best kernel among the recent attempts: its entry points at the best kernel's code below
// rather than repeating it, and says so only while that code is in the prompt.
TEST(Trajectory, ARecentAttemptPointsAtTheBestCodeOnlyWhileItIsShown) {
  const opt::Attempt a = first_correct(1.5, "the best one");
  std::map<int, std::string> sources = {{1, "BEST_KERNEL_CODE\n" + std::string(2'000, 'k') + "\n"}};
  opt::PromptBudgets b;
  auto r = render_memory({a}, sources, b);
  expect_within_budgets(r.fitted);
  EXPECT_NE(r.text.find("(its code is the best kernel, below)"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("BEST_KERNEL_CODE"), r.text.rfind("BEST_KERNEL_CODE"));  // shown once
  // A best-kernel budget too small for code: the identity stays, nothing points at missing code.
  b.best = 60;
  r = render_memory({a}, sources, b);
  expect_within_budgets(r.fitted);
  EXPECT_NE(r.text.find("(attempt 1, 1.500x"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("BEST_KERNEL_CODE"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("its code is the best kernel"), std::string::npos) << r.text;
}

// Model skills ranked in order, each with a technique and an exemplar of `exemplar` characters.
std::vector<ok::skills::RankedSkill> model_skills(int n, size_t exemplar) {
  std::vector<ok::skills::RankedSkill> out;
  for (int i = 0; i < n; ++i) {
    ok::skills::Skill s;
    s.id = fmt::format("sk-{:016x}", i + 1);
    s.kind = "model";
    s.provenance = "learned";
    s.title = fmt::format("technique {}", i);
    s.text = fmt::format("the row held in registers, variant {}", i);
    s.action = {{"technique", fmt::format("online softmax {}", i)},
                {"exemplar", fmt::format("EXEMPLAR_{}\n{}", i, std::string(exemplar, 'x'))}};
    out.push_back({s, 10.0 - i, 1.0, i});
  }
  return out;
}

opt::FittedSection section_of(const opt::FittedPrompt& f, const std::string& name) {
  for (const auto& s : f.sections)
    if (s.name == name) return s;
  ADD_FAILURE() << "no section " << name;
  return {};
}

// The skill library's section is one more section of the fit: whole under the default budgets,
// within its share and trimmed under a small one, and over the total it gives up space by the
// same priorities as the others: after the recent attempts (priority 0) have none left to give,
// before the diagnosis, the ideas and the failures (priorities 2 and 3).
TEST(Trajectory, TheSkillSectionIsFittedByTheSameRuleAsTheOthers) {
  const auto library = model_skills(3, 900);
  std::map<int, std::string> sources;
  const auto history = long_history(40, sources);
  const opt::PromptBudgets b;
  auto r = render_memory({}, {}, b, library);
  expect_within_budgets(r.fitted);
  const opt::FittedSection whole = section_of(r.fitted, "skills");
  EXPECT_EQ(whole.variant, 0u);
  EXPECT_NE(r.text.find(ok::skills::prompt_section(library, ok::skills::kPromptBudgetChars)),
            std::string::npos)
      << r.text;
  for (int i = 0; i < 3; ++i)
    EXPECT_NE(r.text.find(fmt::format("EXEMPLAR_{}", i)), std::string::npos) << i;

  const opt::PromptBudgets fifth = b.scaled_to(b.total / 5);
  r = render_memory(history, sources, fifth, library);
  expect_within_budgets(r.fitted);
  const opt::FittedSection small = section_of(r.fitted, "skills");
  EXPECT_GT(small.chars, 0u);
  EXPECT_LT(small.chars, whole.chars);
  EXPECT_NE(r.text.find(library[0].skill.id), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("EXEMPLAR_2"), std::string::npos);

  opt::PromptBudgets tight = b;
  tight.total = 2000;  // the sections' own budgets as by default, their total tighter
  r = render_memory(history, sources, tight, library);
  expect_within_budgets(r.fitted);
  const opt::FittedSection pressed = section_of(r.fitted, "skills");
  const opt::FittedSection recent = section_of(r.fitted, "recent");
  EXPECT_GT(pressed.variant, 0u) << r.fitted.summary().dump(1);
  EXPECT_EQ(recent.variant + 1, recent.variants);
  for (const char* higher : {"diagnosis", "ideas", "failures"})
    EXPECT_EQ(section_of(r.fitted, higher).variant, 0u) << higher;
  EXPECT_EQ(r.fitted.summary()["sections"].back()["name"], "skills");
}

// skills_query: what the session has learnt (the last diagnosis, the best attempt, the
// direction) is what re-ranks the fed skills before each model generation.
TEST(Trajectory, TheSkillsQueryFollowsTheDiagnosisAndRerankingFollowsIt) {
  EXPECT_EQ(opt::skills_query({}, ""), "");
  opt::Attempt best;
  best.number = 1;
  best.correct = true;
  best.speedup = 1.4;
  best.description = "one program per row";
  best.params = {{"intent", {{"title", "fuse the reduction"}}}};
  opt::Attempt last;
  last.number = 2;
  last.verdict = "correct";
  last.correct = true;
  last.speedup = 0.9;
  last.diagnosis = {{"bottleneck", "memory"},
                    {"evidence", "achieved bandwidth 40% of peak"},
                    {"suggestions", {"coalesced vectorised loads"}}};
  const std::string memory = opt::skills_query({best, last}, "raise occupancy");
  for (const char* word : {"raise occupancy", "memory", "bandwidth", "coalesced",
                           "one program per row", "fuse the reduction"})
    EXPECT_NE(memory.find(word), std::string::npos) << word << " in " << memory;
  last.diagnosis = {{"bottleneck", "compute"},
                    {"evidence", "the matmul runs on CUDA cores"},
                    {"suggestions", {"use tensor cores through tl.dot"}}};
  const std::string compute = opt::skills_query({best, last}, "");
  EXPECT_EQ(compute, opt::skills_query({best, last}, ""));  // deterministic

  auto skill = [](const std::string& title, const std::string& technique, int rank) {
    ok::skills::Skill s;
    s.kind = "model";
    s.provenance = "learned";
    s.title = title;
    s.action = {{"technique", technique}};
    s.id = "sk-" + title;
    return ok::skills::RankedSkill{s, 8.0, 1.0, rank};
  };
  const std::vector<ok::skills::RankedSkill> fed = {
      skill("tensor cores", "use tl.dot for the matmul on tensor cores", 0),
      skill("vectorised loads", "coalesced vectorised loads to reach peak bandwidth", 1)};
  EXPECT_EQ(ok::skills::rerank(fed, memory)[0].skill.title, "vectorised loads");
  EXPECT_EQ(ok::skills::rerank(fed, compute)[0].skill.title, "tensor cores");
}

}  // namespace

// Classes that share a long head ("runtime_error: RuntimeError: CUDA error: ...") stay distinct in
// the tightest rendering: it keeps each line's head and tail, not only its head.
TEST(Trajectory, ClassesSharingAHeadStayDistinctAtTheTightestBudget) {
  const std::vector<std::string> tails = {"an illegal memory access was encountered",
                                          "misaligned address",
                                          "invalid argument",
                                          "too many resources requested for launch",
                                          "unspecified launch failure",
                                          "invalid configuration argument",
                                          "operation not supported",
                                          "out of memory",
                                          "device-side assert triggered",
                                          "an illegal instruction was encountered",
                                          "invalid device function",
                                          "no kernel image is available"};
  std::vector<opt::Attempt> history;
  for (size_t i = 0; i < tails.size(); ++i) {
    opt::Attempt a;
    a.number = static_cast<int>(i) + 1;
    a.verdict = "runtime_error";
    a.error = "RuntimeError: CUDA error: " + tails[i];
    history.push_back(std::move(a));
  }
  opt::PromptBudgets b;
  b.failures = 180;  // 720 characters for twelve classes: the tightest rendering is chosen
  auto sections = opt::trajectory_sections(
      history, {}, b, [](const json& c) { return static_cast<size_t>(c.dump().size()); });
  auto failures = std::find_if(sections.begin(), sections.end(),
                               [](const opt::PromptSection& s) { return s.name == "failures"; });
  ASSERT_NE(failures, sections.end());
  const json& tightest = failures->variants.back()["failure_classes"];
  ASSERT_EQ(tightest.size(), tails.size());
  std::set<std::string> lines;
  for (const auto& l : tightest) lines.insert(l["line"].get<std::string>());
  EXPECT_EQ(lines.size(), tails.size()) << tightest.dump(1);
  // The shared head is said once, on the first line.
  EXPECT_EQ(
      tightest[0]["line"].get<std::string>().rfind("runtime_error: RuntimeError: CUDA error: ", 0),
      0u);
  EXPECT_EQ(tightest[1]["line"].get<std::string>().rfind("...", 0), 0u);
}
