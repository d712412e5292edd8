// `kernel-code sessions [--db PATH] [--json] [--limit N]`: the store's optimisation sessions,
// newest first, as a table (id, problem, backend, model, status, attempts, best speedup, cost,
// start and last update) or, with --json, one JSON object {db, sessions: [...]}
// (docs/kernel-code.md). A session listed here can be watched (`kernel-code watch ID`) or resumed
// (`openkernel optimize
// --resume ID`). Exit codes: 0, 1 internal error, 2 a bad flag or a store that is missing or
// cannot be read. Reads only: a missing store is not created.
#pragma once

#include "cli/command.hpp"

namespace ok::cli {

void add_sessions_command(CLI::App& app, GlobalOptions& g, Action& action);

}  // namespace ok::cli
