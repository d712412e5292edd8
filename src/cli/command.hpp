// How the two programs' subcommands are wired: each command module registers its subcommands on a
// CLI11 app and, when the user picks one, stores the action to run. main() parses, then runs the
// action and returns its exit code. Exit codes: 0 ok (or a verdict reached), 1 internal error,
// 2 bad usage or bad input (see docs/cli.md).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "util/error.hpp"

namespace ok::cli {

using Action = std::function<int()>;

// Options every engine command shares.
struct GlobalOptions {
  std::string db;      // --db PATH (empty: config, else the default store)
  bool quiet = false;  // --quiet
};

void add_evaluate_command(CLI::App& app, GlobalOptions& g, Action& action);
void add_problems_command(CLI::App& app, GlobalOptions& g, Action& action);
void add_example_command(CLI::App& app, GlobalOptions& g, Action& action);
void add_optimize_command(CLI::App& app, GlobalOptions& g, Action& action);
// `score` and `compare` (score_command.cpp).
void add_score_commands(CLI::App& app, GlobalOptions& g, Action& action);
// `sweep` and `baseline` (sweep_command.cpp).
void add_sweep_commands(CLI::App& app, GlobalOptions& g, Action& action);
// `intents` and `strategies`: the search's state (search_command.cpp).
void add_search_commands(CLI::App& app, GlobalOptions& g, Action& action);
// `charts`: benchmark charts of results TSVs and stores (charts_command.cpp).
void add_charts_command(CLI::App& app, GlobalOptions& g, Action& action);
// `hub push|pull`: the Hugging Face Hub (hub_command.cpp).
void add_hub_command(CLI::App& app, GlobalOptions& g, Action& action);
// `traces export`: training datasets from the store (traces_command.cpp).
void add_traces_command(CLI::App& app, GlobalOptions& g, Action& action);

// `skills`: the skill library (skills_command.cpp).
void add_skills_command(CLI::App& app, GlobalOptions& g, Action& action);

// Prints an error in the one format every command uses and returns its exit code.
int report_error(const util::Error& e);

// Runs main's shared body: parse, run the chosen action, map exceptions to exit code 1.
int run_app(CLI::App& app, int argc, char** argv, Action& action);

}  // namespace ok::cli
