#include "tui/terminal.hpp"

#include <fcntl.h>
#include <langinfo.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "tui/keys.hpp"
#include "util/cancel.hpp"
#include "util/paths.hpp"

#define NCURSES_NOMACROS
#define NCURSES_WIDECHAR 1
#include <curses.h>

namespace ok::tui {

namespace {

// What the handlers need, set up before full screen starts: plain data only, so that the
// handlers use write(), tcsetattr() and dup2() (async-signal-safe) and nothing else.
struct Emergency {
  char restore[256] = {};  // reset attributes, show the cursor, keypad off, normal screen
  int restore_len = 0;
  int tty = -1;
  termios modes{};
  bool have_modes = false;
  int saved_stderr = -1;  // fd 2 as it was, while fd 2 goes to the log
};
Emergency g_emergency;
std::atomic<bool> g_active{false};   // full screen is up: the handlers must restore it
std::atomic<bool> g_open{false};     // a Terminal exists
volatile sig_atomic_t g_signal = 0;  // SIGTERM, SIGINT or SIGHUP seen
std::terminate_handler g_previous_terminate = nullptr;
static_assert(std::atomic<bool>::is_always_lock_free);

constexpr int kEndSignals[] = {SIGTERM, SIGINT, SIGHUP};
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

void emergency_restore() {
  if (!g_active.exchange(false)) return;
  const Emergency& e = g_emergency;
  if (e.restore_len > 0) (void)!write(e.tty, e.restore, static_cast<size_t>(e.restore_len));
  if (e.have_modes) tcsetattr(e.tty, TCSANOW, &e.modes);
  if (e.saved_stderr >= 0) dup2(e.saved_stderr, STDERR_FILENO);
}

// fd 2 to `log` (kept open by fd 2 itself); the old fd 2 in g_emergency.saved_stderr.
util::Result<void> redirect_stderr(const std::filesystem::path& log) {
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return util::fail(util::ErrorKind::kEnvironment,
                      "cannot write " + log.string() + ": " + std::strerror(errno));
  std::fflush(stderr);
  g_emergency.saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  dup2(fd, STDERR_FILENO);
  ::close(fd);
  return {};
}

void put_stderr_back() {
  int& saved = g_emergency.saved_stderr;
  if (saved < 0) return;
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  ::close(saved);
  saved = -1;
}

extern "C" void on_end_signal(int sig) {
  if (g_signal != 0) {  // a second request: nobody is listening, end now
    emergency_restore();
    _exit(128 + sig);
  }
  g_signal = sig;
  util::cancel_flag().store(true);
}

extern "C" void on_crash_signal(int sig) {
  emergency_restore();
  raise(sig);  // SA_RESETHAND: the default action now
}

void on_terminate() {
  emergency_restore();
  if (g_previous_terminate) g_previous_terminate();
  std::abort();
}

void install_end_handler(int sig) {
  struct sigaction sa {};
  sa.sa_handler = on_end_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);  // no SA_RESTART: a wait for a key returns
}

void install_handlers() {
  for (int sig : kEndSignals) install_end_handler(sig);
  struct sigaction crash {};
  crash.sa_handler = on_crash_signal;
  sigemptyset(&crash.sa_mask);
  crash.sa_flags = SA_RESETHAND;
  for (int sig : kCrashSignals) sigaction(sig, &crash, nullptr);
  g_previous_terminate = std::set_terminate(on_terminate);
}

void remove_handlers() {
  for (int sig : kEndSignals) signal(sig, SIG_DFL);
  for (int sig : kCrashSignals) signal(sig, SIG_DFL);
  std::set_terminate(g_previous_terminate);
}

void append_capability(Emergency& e, const char* name) {
  const char* s = tigetstr(const_cast<char*>(name));
  if (s == nullptr || s == reinterpret_cast<const char*>(-1)) return;
  size_t n = std::strlen(s);
  if (e.restore_len + n >= sizeof e.restore) return;
  std::memcpy(e.restore + e.restore_len, s, n);
  e.restore_len += static_cast<int>(n);
}

short curses_color(Color c) {
  switch (c) {
    case Color::Default:
      return -1;
    case Color::Black:
      return COLOR_BLACK;
    case Color::Red:
      return COLOR_RED;
    case Color::Green:
      return COLOR_GREEN;
    case Color::Yellow:
      return COLOR_YELLOW;
    case Color::Blue:
      return COLOR_BLUE;
    case Color::Magenta:
      return COLOR_MAGENTA;
    case Color::Cyan:
      return COLOR_CYAN;
    case Color::White:
      return COLOR_WHITE;
    case Color::Gray:
      return COLORS >= 16 ? 8 : COLOR_WHITE;  // bright black where there is one
  }
  return -1;
}

bool no_color() {
  auto v = util::getenv_str("NO_COLOR");
  return v && !v->empty();
}

// A cell never drawn: its glyph is empty, which no canvas cell has, so it always differs.
const Cell kUnknown{"", {}};

int map_function_key(int code) {
  switch (code) {
    case KEY_UP:
      return static_cast<int>(Key::Up);
    case KEY_DOWN:
      return static_cast<int>(Key::Down);
    case KEY_LEFT:
      return static_cast<int>(Key::Left);
    case KEY_RIGHT:
      return static_cast<int>(Key::Right);
    case KEY_PPAGE:
      return static_cast<int>(Key::PageUp);
    case KEY_NPAGE:
      return static_cast<int>(Key::PageDown);
    case KEY_HOME:
      return static_cast<int>(Key::Home);
    case KEY_END:
      return static_cast<int>(Key::End);
    case KEY_BTAB:
      return static_cast<int>(Key::BackTab);
    case KEY_ENTER:
      return static_cast<int>(Key::Enter);
    case KEY_BACKSPACE:
      return static_cast<int>(Key::Backspace);
    default:
      return -1;
  }
}

int map_character(wint_t c) {
  switch (c) {
    case '\t':
      return static_cast<int>(Key::Tab);
    case '\r':
    case '\n':
      return static_cast<int>(Key::Enter);
    case 27:
      return static_cast<int>(Key::Escape);
    case 8:
    case 127:
      return static_cast<int>(Key::Backspace);
    default:
      return static_cast<int>(c);
  }
}

}  // namespace

util::Result<std::unique_ptr<Terminal>> Terminal::open(const std::filesystem::path& stderr_log) {
  if (!isatty(STDOUT_FILENO))
    return util::fail(util::ErrorKind::kUsage, "stdout is not a terminal");
  if (g_open.exchange(true))
    return util::fail(util::ErrorKind::kUsage, "the terminal is already open");
  std::unique_ptr<Terminal> t(new Terminal());  // from here its destructor undoes what was done
  std::setlocale(LC_CTYPE, "");                 // the character set only: numbers keep the C locale
  t->ascii_ = std::strcmp(nl_langinfo(CODESET), "UTF-8") != 0;

  Emergency& e = g_emergency;
  e = Emergency{};
  e.tty = STDOUT_FILENO;
  e.have_modes = tcgetattr(e.tty, &e.modes) == 0;
  t->input_ = isatty(STDIN_FILENO) ? stdin : std::fopen("/dev/tty", "r");
  if (t->input_ == nullptr)
    return util::fail(util::ErrorKind::kUsage, "no terminal to read keys from");
  t->screen_ = newterm(nullptr, stdout, t->input_);
  if (t->screen_ == nullptr)
    return util::fail(
        util::ErrorKind::kEnvironment,
        "the terminal cannot be driven (TERM=" + util::getenv_str("TERM").value_or("") + ")");
  set_term(static_cast<SCREEN*>(t->screen_));
  t->open_ = true;
  for (const char* cap : {"sgr0", "cnorm", "rmkx", "rmcup"}) append_capability(e, cap);
  install_handlers();
  t->handlers_ = true;
  g_active = true;
  if (!stderr_log.empty())
    if (auto r = redirect_stderr(stderr_log); !r) return std::unexpected(r.error());

  raw();  // Ctrl-C, Ctrl-Z and Ctrl-S are keys here
  noecho();
  keypad(stdscr, TRUE);
  set_escdelay(25);
  leaveok(stdscr, TRUE);
  curs_set(0);
  if (has_colors() && !no_color()) {
    start_color();
    use_default_colors();
    t->colors_ = true;
  }
  t->resize();
  return t;
}

Terminal::~Terminal() {
  restore();
  if (handlers_) remove_handlers();
  if (screen_ != nullptr) delscreen(static_cast<SCREEN*>(screen_));
  if (input_ != nullptr && input_ != stdin) std::fclose(input_);
  g_open = false;
}

void Terminal::restore() {
  if (!open_) return;
  open_ = false;
  g_active = false;
  curs_set(1);
  endwin();
  std::fflush(stdout);
  put_stderr_back();
}

int Terminal::pending_signal() {
  return g_signal;
}

void Terminal::resize() {
  getmaxyx(stdscr, height_, width_);
  shown_.assign(static_cast<size_t>(width_) * static_cast<size_t>(height_), kUnknown);
  full_redraw_ = true;
}

short Terminal::pair_for(const Style& style) {
  std::pair<int, int> want{curses_color(style.fg), curses_color(style.bg)};
  if (want == std::pair<int, int>{-1, -1}) return 0;
  for (size_t i = 0; i < pairs_.size(); ++i)
    if (pairs_[i] == want) return static_cast<short>(i + 1);
  if (static_cast<int>(pairs_.size()) + 1 >= COLOR_PAIRS) return 0;
  pairs_.push_back(want);
  auto n = static_cast<short>(pairs_.size());
  init_pair(n, static_cast<short>(want.first), static_cast<short>(want.second));
  return n;
}

void Terminal::put_cell(int x, int y, const Cell& cell) {
  const Style& s = cell.style;
  attr_t attrs = A_NORMAL;
  if (s.bold) attrs |= A_BOLD;
  if (s.dim) attrs |= A_DIM;
  if (s.underline) attrs |= A_UNDERLINE;
  bool reverse = s.reverse;
  short pair = 0;
  if (colors_)
    pair = pair_for(s);
  else if (s.bg != Color::Default)
    reverse = !reverse;  // a background marks something (the selection): keep it visible
  if (reverse) attrs |= A_REVERSE;
  wattr_set(stdscr, attrs, pair, nullptr);
  mvwaddstr(stdscr, y, x, cell.glyph.c_str());
}

void Terminal::draw(const Canvas& canvas) {
  if (!open_) return;
  if (full_redraw_) {
    clearok(stdscr, TRUE);
    full_redraw_ = false;
  }
  const Cell blank{};
  for (int y = 0; y < height_; ++y)
    for (int x = 0; x < width_; ++x) {
      bool inside = x < canvas.width() && y < canvas.height();
      const Cell& want = inside ? canvas.at(x, y) : blank;
      Cell& have =
          shown_[static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)];
      if (have == want) continue;
      put_cell(x, y, want);
      have = want;
    }
  wnoutrefresh(stdscr);
  doupdate();
}

std::optional<int> Terminal::read_key(int timeout_ms) {
  if (g_signal != 0 || !open_) {
    // No keys once a signal came (the UI is ending): still wait, so a loop that keeps drawing
    // while the engine winds down does not spin.
    if (timeout_ms > 0) napms(timeout_ms);
    return std::nullopt;
  }
  wtimeout(stdscr, timeout_ms);
  wint_t c = 0;
  int r = wget_wch(stdscr, &c);
  if (r == ERR) return std::nullopt;
  if (r == KEY_CODE_YES) {
    if (c == KEY_RESIZE) {
      resize();
      return static_cast<int>(Key::Resize);
    }
    int k = map_function_key(static_cast<int>(c));
    return k < 0 ? std::nullopt : std::optional(k);
  }
  return map_character(c);
}

}  // namespace ok::tui
