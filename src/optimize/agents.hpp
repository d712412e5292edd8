// The optimiser's two agents: a Generator that writes the next candidate and a Critic that
// diagnoses an evaluated one. Each comes in two kinds: builtin (offline, deterministic: pattern
// templates from src/generate, heuristics over the evaluation's profile and roofline) and LLM
// (prompts from data/prompts through an llm::Client).
//
// Agents never throw and never fail the session: a broken model reply becomes a Generation with
// an `error` (a recorded failed attempt) or a Critic falls back to the heuristic diagnosis.
// Not thread-safe; one per session.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "llm/client.hpp"
#include "optimize/prompt_budget.hpp"
#include "search/world_model.hpp"
#include "skills/retrieve.hpp"

namespace ok::optimize {

// What the agents know about the problem (gathered once per session from the worker).
struct ProblemContext {
  std::string reference_path, name, source;
  std::string backend;     // cpu, triton, cuda
  nlohmann::json graph;    // the worker's `analyze` result (docs/graph-ir.md); null if unknown
  nlohmann::json inspect;  // the worker's `inspect` result: shapes, flops, bytes
  nlohmann::json device;   // the worker's `device_info` result
  std::string guidance;    // the search strategy's advice for the generator (may be empty)
  // The skills retrieved for this session, best first (docs/skills.md): they reorder the builtin
  // template points and fill the model prompt's skill section. Empty with --no-skills.
  std::vector<skills::RankedSkill> library;
};

// One finished attempt as the agents see it.
struct Attempt {
  int number = 0;
  std::string generator;
  std::string path;
  std::string verdict;  // evaluator verdict, generation_failed, unsupported or evaluator_error
  bool correct = false;
  std::optional<double> speedup, runtime_us;
  std::string error;  // compile error, mismatch, exception, or why generation failed
  double cost_usd = 0;
  nlohmann::json params = nlohmann::json::object();
  std::string description;
  nlohmann::json diagnosis;  // the critic's; null when none
  double wall_s = 0;
  nlohmann::json summary;  // flags, reasons, roofline, profile of the evaluation; null if none
  std::optional<int64_t> evaluation_id;
};

struct Generation {
  std::string source;  // the candidate file; empty when generation failed
  std::string description;
  nlohmann::json params = nlohmann::json::object();
  double cost_usd = 0;
  std::string error;       // non-empty: this attempt failed before evaluation
  std::string verdict;     // for a failure: generation_failed (default) or unsupported
  bool exhausted = false;  // nothing more to propose; the loop stops
};

// `next` may run on several threads at once (the orchestrator keeps generations in flight) once
// `space` has been called: implementations keep no mutable state beyond what space() fills.
class Generator {
 public:
  virtual ~Generator() = default;
  virtual std::string name() const = 0;
  // The template points the generator can render, best prior first, each as the `params` its
  // attempts carry (builtin); empty for a model, whose space is unbounded.
  virtual std::vector<nlohmann::json> space(const ProblemContext&) { return {}; }
  // The next candidate. `direction` (may be null) is what the search asks for: the template
  // point to render (builtin), or an intent to pursue and whether to sample afresh without the
  // history (a model). `text` (may be null) receives a model's reply as it arrives.
  virtual Generation next(const ProblemContext& problem, const std::vector<Attempt>& history,
                          const search::Direction* direction = nullptr,
                          llm::StreamSink* text = nullptr) = 0;
};

class Critic {
 public:
  virtual ~Critic() = default;
  // `result` is the evaluator's JSON; `cost_usd` receives what the diagnosis cost.
  virtual nlohmann::json diagnose(const ProblemContext& problem, const Attempt& attempt,
                                  const nlohmann::json& result, double& cost_usd) = 0;
};

// The diagnosis schema (bottleneck, evidence, suggestions, expected_gain): docs/optimize.md.
const nlohmann::json& diagnosis_schema();

// The heuristic critic: bottleneck class from the verdict, the roofline position, the profile's
// kernel table and the runtime.
nlohmann::json heuristic_diagnosis(const ProblemContext& problem, const Attempt& attempt,
                                   const nlohmann::json& result);

// The offline generator over src/generate's templates (`--model builtin`).
std::unique_ptr<Generator> make_builtin_generator(std::filesystem::path skills_dir, uint64_t seed,
                                                  int max_candidates);
std::unique_ptr<Critic> make_heuristic_critic();

// The LLM agents. `client` must outlive them; `session` labels the recorded calls; `budgets` bound
// the generator prompt's trajectory memory (trajectory.hpp).
std::unique_ptr<Generator> make_llm_generator(llm::Client& client, std::filesystem::path prompts,
                                              std::filesystem::path skills_dir, std::string session,
                                              PromptBudgets budgets = {});
std::unique_ptr<Critic> make_llm_critic(llm::Client& client, std::filesystem::path prompts,
                                        std::string session);

// The compact per-attempt summary of an evaluation kept in the history and shown to agents.
nlohmann::json summarize_result(const nlohmann::json& result);
// The failure text of an evaluation (compile error, mismatch, exception), empty when it passed.
std::string failure_text(const nlohmann::json& result);

}  // namespace ok::optimize
