// kernel-code's terminal UI commands (docs/kernel-code.md):
//   optimize  the flags of `openkernel optimize` (add_optimize_flags); runs the engine
//             (run_optimize) on a thread of its own with the UI's RunModel as its observer and a
//             Control for the p and s keys, while this thread runs the UI (tui::run_ui);
//   watch     follows a session that another process runs, or that ended, through the store's
//             events (optimize::EventFollower every 250 ms, replayed into a RunModel).
// Both refuse a stdout that is not a terminal (exit 2: `openkernel optimize` is the command for
// that) and leave the terminal as they found it. Exit codes: 0 after q (or a watched session),
// 130 after Ctrl-C, 143 after SIGTERM (129 SIGHUP), the engine's code when it fails (1 internal,
// 2 bad usage or input), 2 for --json and for an unknown session.
#pragma once

#include "cli/command.hpp"

namespace ok::cli {

void add_kernel_code_commands(CLI::App& app, GlobalOptions& g, Action& action);

}  // namespace ok::cli
