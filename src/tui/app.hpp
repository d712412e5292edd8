// The terminal UI's loop, on the thread that owns the Terminal: it waits for a key at most 100 ms
// at a time, redraws when a key was handled, the model changed (RunModel::version), the terminal
// was resized, or every 250 ms for the clocks (the elapsed time, the ETA), and otherwise sleeps in
// the wait for a key (idle, well under 5% of a core). Each frame renders a snapshot of the model
// into a Canvas of the terminal's size (tui::render) and the Terminal writes the cells that
// changed. Keys go to handle_key; the loop acts on its Command: Quit ends it, TogglePause and Stop
// go to the run's optimize::Control (a watched run has none: a notice says so).
//
// The same loop serves `kernel-code optimize` (the engine feeds the model from its own thread) and
// `kernel-code watch` (Run::poll feeds it from the store's events on this thread).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "optimize/control.hpp"
#include "store/store.hpp"
#include "tui/model.hpp"
#include "tui/render.hpp"
#include "tui/terminal.hpp"

namespace ok::tui {

// What the loop shows and steers. Borrowed: each must outlive the loop.
struct Run {
  const RunModel* model = nullptr;
  Details details;
  optimize::Control* control = nullptr;  // null (watch): p and s only show a notice
  std::function<void()> poll;            // called every turn on the UI thread; may be empty
  std::function<bool()> close;  // the UI closes by itself once it returns true; may be empty
};

enum class Ending {
  Quit,         // q
  Interrupted,  // Ctrl-C, or util::cancel_flag() set by someone else (SIGINT to the engine)
  Signal,       // SIGTERM, SIGHUP or SIGINT to this process: Terminal::pending_signal()
  Closed,       // Run::close() said so
};

// Runs the UI until it ends; returns why.
Ending run_ui(Terminal& term, const Run& run);

// Keeps drawing the run with `notice` over its top line until `done()` (true) or a second q or
// Ctrl-C (false: the user will not wait). A second signal ends the process (Terminal).
bool wait_ui(Terminal& term, const Run& run, const std::string& notice,
             const std::function<bool()>& done);

// The process's exit code after the UI ended with `e`: 0 after q, 130 after Ctrl-C, 128 + the
// signal after one; `closed_code` when the run closed the UI.
int exit_code(Ending e, int closed_code);

// Details read from files and a store: an attempt's kernel source from its path, an evaluation's
// result JSON from the store that `open()` gives (the UI thread's own connection, asked for on
// first use and again while it gives none). Both kept once read.
Details store_details(std::function<std::optional<store::Store>()> open);

// The last `lines` lines of the file at `path`, empty when it is missing or empty.
std::string tail_of(const std::filesystem::path& path, int lines);

}  // namespace ok::tui
