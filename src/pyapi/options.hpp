// The keyword arguments of a Python call, as a JSON object, read into the CLI's option structs:
// each argument named after its flag (`--timing-budget` -> timing_budget), checked for its type
// and, where the flag has a fixed set of values, for its value. An unknown argument or a wrong
// type is kUsage naming the argument. Stateless functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/evaluate_command.hpp"
#include "cli/optimize_command.hpp"
#include "cli/sweep_command.hpp"

namespace ok::pyapi {

// What an Evaluator fixes for all its evaluations: python, backend, db (GlobalOptions) and the
// evaluation host (eval_host: --eval-host, docs/remote.md).
struct EngineOptions {
  cli::GlobalOptions global;
  std::string python, backend, eval_host;
};

util::Result<EngineOptions> engine_options(const nlohmann::json& j);
// One evaluation: the problem, candidate, device, limits, seed and timing modes.
util::Result<cli::EvaluateOptions> evaluate_options(const nlohmann::json& j);
util::Result<cli::OptimizeOptions> optimize_options(const nlohmann::json& j, cli::GlobalOptions& g);
util::Result<cli::SweepCliOptions> sweep_options(const nlohmann::json& j, cli::GlobalOptions& g);
util::Result<cli::ProblemOptions> problem_options(const nlohmann::json& j);

}  // namespace ok::pyapi
