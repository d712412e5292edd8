// The terminal under the UI: ncursesw on the process's controlling terminal, full screen (the
// alternate screen), keys without echo or line buffering, no cursor. draw() copies a Canvas to the
// screen and writes only the cells that changed since the last frame; read_key() maps ncurses'
// keys to the code points and tui::Key values that handle_key() takes.
//
// Colours follow the Canvas's styles unless NO_COLOR is set to a non-empty value (then only bold,
// dim, reverse and underline); a locale that is not UTF-8 gets the Canvas's ASCII fallback
// (ascii()). Ctrl-C arrives as a key (code 3), not as SIGINT: the terminal is in raw mode.
//
// The terminal is restored (normal screen, cursor, the saved tty modes) by restore() or the
// destructor, and on the paths where no destructor runs: SIGTERM, SIGINT and SIGHUP (the handler
// records the signal and sets util::cancel_flag(); the UI's loop sees pending_signal() and ends;
// a second signal restores from the handler with async-signal-safe calls only and ends the
// process with 128 + the signal), std::terminate, and SIGSEGV/SIGBUS/SIGFPE/SIGILL/SIGABRT (the
// handler restores, then the signal takes its default action).
//
// While the screen is up, the process's stderr (fd 2, which child processes inherit) goes to a
// log file when open() is given one, so that nothing scribbles over the screen; restore() (and
// the handlers) put it back.
//
// One Terminal per process, used from one thread (the UI's). The handlers are process-wide.
#pragma once

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "tui/canvas.hpp"
#include "util/error.hpp"

namespace ok::tui {

class Terminal {
 public:
  // kUsage when stdout is not a terminal (or a Terminal is already open); kEnvironment when
  // ncurses cannot start on it (an unknown TERM, say) or `stderr_log` cannot be written.
  static util::Result<std::unique_ptr<Terminal>> open(const std::filesystem::path& stderr_log = {});
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  int width() const { return width_; }
  int height() const { return height_; }
  bool ascii() const { return ascii_; }    // the locale is not UTF-8
  bool colors() const { return colors_; }  // colours drawn (a colour terminal and no NO_COLOR)

  // Shows `canvas` (of any size; cells outside the screen are dropped): writes the cells that
  // differ from the previous frame, then one screen update. After a resize the whole screen.
  void draw(const Canvas& canvas);

  // Waits up to `timeout_ms` for a key: a printable character as its code point, a control
  // character as its code (Ctrl-C = 3), the others as tui::Key (Key::Resize after the terminal
  // was resized: width() and height() are the new size). nullopt when none came, or when a
  // signal is pending.
  std::optional<int> read_key(int timeout_ms);

  // The signal that asked the process to end (SIGTERM, SIGINT, SIGHUP), 0 when none.
  static int pending_signal();

  // Leaves full screen and puts the tty back as it was; idempotent. The handlers stay until the
  // Terminal is destroyed.
  void restore();

 private:
  Terminal() = default;
  void resize();
  short pair_for(const Style& style);
  void put_cell(int x, int y, const Cell& cell);

  void* screen_ = nullptr;  // ncurses' SCREEN
  FILE* input_ = nullptr;   // stdin, or /dev/tty when stdin is not the terminal
  int width_ = 0, height_ = 0;
  bool ascii_ = false, colors_ = false, open_ = false, handlers_ = false;
  std::vector<Cell> shown_;  // what the screen holds, width_ x height_, row-major
  bool full_redraw_ = true;
  std::vector<std::pair<int, int>> pairs_;  // colour pair n + 1: {fg, bg}
};

}  // namespace ok::tui
