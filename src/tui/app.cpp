#include "tui/app.hpp"

#include <chrono>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "store/store.hpp"
#include "tui/keys.hpp"
#include "util/cancel.hpp"
#include "util/paths.hpp"

namespace ok::tui {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kKeyWaitMs = 100;
constexpr auto kTick = std::chrono::milliseconds(250);
constexpr auto kNoticeFor = std::chrono::seconds(3);
constexpr int kCtrlC = 3;

// One frame's drawing: the snapshot, the canvas of the terminal's size, what changed since.
class Screen {
 public:
  Screen(Terminal& term, const Run& run) : term_(term), run_(run) {}

  // Draws when something changed or a tick passed; `notice` over the top line when not empty.
  void refresh(UiState& ui, const std::string& notice, bool force) {
    auto now = Clock::now();
    uint64_t version = run_.model->version();
    if (!force && version == drawn_version_ && now - drawn_at_ < kTick) return;
    snapshot_ = run_.model->snapshot();
    drawn_version_ = version;
    drawn_at_ = now;
    Canvas canvas(term_.width(), term_.height(), term_.ascii());
    render(snapshot_, ui, run_.details, canvas);
    if (!notice.empty()) put_notice(canvas, notice);
    term_.draw(canvas);
  }
  const Snapshot& snapshot() const { return snapshot_; }

 private:
  static void put_notice(Canvas& canvas, const std::string& notice) {
    Style style{Color::Black, Color::Yellow, true};
    std::string line = " " + notice;
    int n = canvas.put(0, 0, line, style, canvas.width());
    for (int x = n; x < canvas.width(); ++x) canvas.put(x, 0, " ", style);
  }

  Terminal& term_;
  const Run& run_;
  Snapshot snapshot_;
  uint64_t drawn_version_ = 0;
  Clock::time_point drawn_at_{};
};

// A notice that shows for a few seconds.
struct Notice {
  std::string text;
  Clock::time_point until{};
  void show(std::string t) {
    text = std::move(t);
    until = Clock::now() + kNoticeFor;
  }
  std::string current() const { return Clock::now() < until ? text : ""; }
};

// Acts on a command; returns true when the UI should end (Quit).
bool act(Command c, const Run& run, Notice& notice) {
  switch (c) {
    case Command::None:
      return false;
    case Command::Quit:
      return true;
    case Command::TogglePause:
    case Command::Stop:
      if (run.control == nullptr) {
        notice.show("watching: only the kernel-code that runs this session can pause or stop it");
      } else if (c == Command::Stop) {
        run.control->request_stop();
        notice.show("stopping: the attempts in flight finish and are evaluated");
      } else if (run.control->paused()) {
        run.control->resume();
        notice.show("resumed");
      } else {
        run.control->pause();
        notice.show("paused: no new generation; the attempts in flight finish");
      }
      return false;
  }
  return false;
}

}  // namespace

Ending run_ui(Terminal& term, const Run& run) {
  Screen screen(term, run);
  UiState ui;
  Notice notice;
  bool force = true;
  std::string shown_notice;
  for (;;) {
    if (Terminal::pending_signal() != 0) return Ending::Signal;
    // A signal's handler sets the cancel flag after the signal: look again, so SIGTERM is 143.
    if (util::cancel_flag().load())
      return Terminal::pending_signal() != 0 ? Ending::Signal : Ending::Interrupted;
    if (run.poll) run.poll();
    if (run.close && run.close()) return Ending::Closed;
    std::string now_notice = notice.current();
    screen.refresh(ui, now_notice, force || now_notice != shown_notice);
    shown_notice = now_notice;
    force = false;
    auto key = term.read_key(kKeyWaitMs);
    if (!key) continue;
    if (*key == kCtrlC) return Ending::Interrupted;
    force = true;
    if (act(handle_key(*key, ui, screen.snapshot()), run, notice)) return Ending::Quit;
  }
}

bool wait_ui(Terminal& term, const Run& run, const std::string& notice,
             const std::function<bool()>& done) {
  Screen screen(term, run);
  UiState ui;
  bool force = true;
  while (!done()) {
    if (run.poll) run.poll();
    screen.refresh(ui, notice, force);
    force = false;
    auto key = term.read_key(kKeyWaitMs);
    if (!key) continue;
    if (*key == kCtrlC || *key == 'q') return false;
    force = *key == static_cast<int>(Key::Resize);
  }
  return true;
}

int exit_code(Ending e, int closed_code) {
  switch (e) {
    case Ending::Quit:
      return 0;
    case Ending::Interrupted:
      return 130;
    case Ending::Signal:
      return 128 + Terminal::pending_signal();
    case Ending::Closed:
      return closed_code;
  }
  return 1;
}

Details store_details(std::function<std::optional<store::Store>()> open) {
  // Kept by both functions: sources by path, results by evaluation id, and the connection.
  struct Cache {
    std::function<std::optional<store::Store>()> open;
    std::optional<store::Store> store;
    std::map<std::string, std::string> sources;
    std::map<int64_t, nlohmann::json> results;
  };
  auto cache = std::make_shared<Cache>();
  cache->open = std::move(open);
  constexpr size_t kKept = 256;  // entries of each map; a fuller map starts over
  Details d;
  d.source = [cache](const AttemptView& a) -> std::optional<std::string> {
    if (a.path.empty()) return std::nullopt;
    if (auto it = cache->sources.find(a.path); it != cache->sources.end()) return it->second;
    auto text = util::read_file(a.path);
    if (!text) return std::nullopt;
    if (cache->sources.size() >= kKept) cache->sources.clear();
    return cache->sources[a.path] = std::move(*text);
  };
  d.evaluation = [cache](int64_t id) -> std::optional<nlohmann::json> {
    if (auto it = cache->results.find(id); it != cache->results.end()) return it->second;
    if (!cache->store && cache->open)
      if (auto st = cache->open()) cache->store.emplace(std::move(*st));
    if (!cache->store) return std::nullopt;
    auto text = cache->store->evaluation_result(id);
    if (!text || !*text) return std::nullopt;
    auto parsed = nlohmann::json::parse(**text, nullptr, false);
    if (parsed.is_discarded()) return std::nullopt;
    if (cache->results.size() >= kKept) cache->results.clear();
    return cache->results[id] = std::move(parsed);
  };
  return d;
}

std::string tail_of(const std::filesystem::path& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> kept;
  for (std::string line; std::getline(in, line);) {
    kept.push_back(std::move(line));
    if (static_cast<int>(kept.size()) > lines) kept.pop_front();
  }
  std::string out;
  for (const auto& line : kept) out += line + "\n";
  return out;
}

}  // namespace ok::tui
