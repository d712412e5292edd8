// `kernel-code dashboard`: serves the local web dashboard of the store's sessions (ten panels,
// a read-only JSON API; docs/dashboard.md) until Ctrl-C. Loopback by default; a non-loopback
// --host is served only when asked for and with a warning. Exit codes: 0 (stopped by Ctrl-C),
// 2 bad usage (no such store, session or results TSV, the page's files missing, the port taken).
// The Charts page draws chart_data (src/charts) of --results TSVs and the store's sessions.
#pragma once

#include "cli/command.hpp"

namespace ok::cli {

void add_dashboard_command(CLI::App& app, Action& action);

}  // namespace ok::cli
