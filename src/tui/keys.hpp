// What the user steers in the terminal UI: the UI's state (focus, selection, filter, overlays)
// and handle_key, which applies one key to it and says what the run must do. Pure: the terminal
// layer (terminal.hpp) reads keys and maps ncurses' codes to Key; app.cpp acts on the Command.
//
// Keys (docs/kernel-code.md): q quit, p pause/resume, s stop, Tab/BackTab and Left/Right move the
// focus, Up/Down/PageUp/PageDown/Home/End move the selection (experiment log) or scroll (diff,
// agent), Enter opens the selected attempt full screen, Esc closes it (or the help, or the
// filter), d toggles the diff's base (best or previous), / starts the filter (typing edits it,
// Enter keeps it, Esc clears it), ? shows every key. Not thread-safe: the UI thread owns it.
#pragma once

#include <string>
#include <vector>

#include "tui/model.hpp"

namespace ok::tui {

enum class Panel { Agent, Trajectory, Profiling, Log, Diff };

struct UiState {
  Panel focus = Panel::Log;
  int selected = -1;              // the selected attempt's number; -1: follow the newest attempt
  std::string filter;             // words every listed attempt matches (see filtered())
  bool filtering = false;         // the filter prompt has the keyboard
  bool diff_vs_previous = false;  // the diff's base: the previous attempt instead of the best
  bool help = false;              // the key overlay
  bool detail = false;            // Enter: the selected attempt full screen
  int diff_scroll = 0;            // first diff row shown
  int agent_scroll = 0;           // lines scrolled back from the newest of the agent's text
};

// Keys as the terminal layer delivers them: printable characters as their code point, the rest
// as these values (above every code point).
enum class Key : int {
  Up = 0x110000,
  Down,
  Left,
  Right,
  PageUp,
  PageDown,
  Home,
  End,
  Tab,
  BackTab,
  Enter,
  Escape,
  Backspace,
  Resize
};

enum class Command { None, Quit, TogglePause, Stop };

// Applies `key` to `ui`; returns what the run must do (the terminal layer acts on it).
Command handle_key(int key, UiState& ui, const Snapshot& s);

// The attempts the experiment log lists under `filter`, in the order recorded: those where each
// of its words (any case) starts a word of the attempt's number (#12), verdict, flags, what it
// did, its intent or its generator.
std::vector<const AttemptView*> filtered(const Snapshot& s, const std::string& filter);
// The attempt the panels show: the selected one, else the newest listed; null when none.
const AttemptView* selected_attempt(const Snapshot& s, const UiState& ui);

}  // namespace ok::tui
