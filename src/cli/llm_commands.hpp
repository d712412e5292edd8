// The LLM commands: `openkernel llm ping` (one round trip), `openkernel models` (the registry),
// `openkernel config` and `kernel-code config` (model, key and base URL in the 0600 config file),
// and the model flags every command that calls a model shares.
//
// Registration only stores an action; nothing touches the network or the disk until it runs.
#pragma once

#include <optional>
#include <string>

#include "cli/command.hpp"
#include "config/config.hpp"
#include "llm/registry.hpp"
#include "util/error.hpp"

namespace ok::cli {

struct LlmOptions {
  std::string model;        // --model (empty: the config's model)
  std::string base_url;     // --base-url (empty: the config's, when the model is the config's)
  std::string api_key_env;  // --api-key-env VAR: take the key from VAR only
  double budget_usd = 0;    // --budget-usd: no new model calls once this much is spent; 0: none
};

// Adds --model, --base-url and --api-key-env (and --budget-usd when `with_budget`) to a subcommand.
void add_llm_options(CLI::App* cmd, LlmOptions& o, bool with_budget = true);
// The spending limit for an llm::Ledger; nullopt when none was set.
std::optional<double> budget_of(const LlmOptions& o);

// The endpoint for the flags, environment and config; kUsage saying what to set when the model is
// unknown or no key is found. Touches no network.
util::Result<llm::Endpoint> resolve_llm(const LlmOptions& o, const config::Config& cfg,
                                        const llm::Registry& registry);

void add_llm_commands(CLI::App& app, GlobalOptions& g, Action& action);
void add_kernel_code_config_command(CLI::App& app, Action& action);

}  // namespace ok::cli
