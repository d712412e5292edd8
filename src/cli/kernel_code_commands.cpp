#include "cli/kernel_code_commands.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/context.hpp"
#include "cli/optimize_command.hpp"
#include "optimize/control.hpp"
#include "optimize/event_replay.hpp"
#include "tui/app.hpp"
#include "tui/model.hpp"
#include "tui/terminal.hpp"
#include "util/cancel.hpp"
#include "util/paths.hpp"

namespace ok::cli {

namespace {

constexpr auto kPollEvery = std::chrono::milliseconds(250);

int refuse(const std::string& why) {
  fmt::print(stderr, "kernel-code: error: {}\n", why);
  return 2;
}

int refuse_non_terminal() {
  return refuse(
      "stdout is not a terminal: kernel-code shows the run full screen; `openkernel optimize` "
      "takes the same flags and prints its progress and report instead");
}

// Where the run's stderr goes while the screen is up (child processes write there too).
std::filesystem::path stderr_log() {
  auto dir = util::cache_dir() / "kernel-code";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return dir / fmt::format("stderr-{}.log", getpid());
}

// After the screen is down: what the run wrote on stderr. A short log is printed and removed; of a
// longer one the last lines, and where the rest is.
void print_log(const std::filesystem::path& log) {
  constexpr int kShown = 20;
  std::string tail = tui::tail_of(log, kShown + 1);
  bool whole = std::count(tail.begin(), tail.end(), '\n') <= kShown;
  if (whole) {
    fmt::print(stderr, "{}", tail);
    std::error_code ec;
    std::filesystem::remove(log, ec);
    return;
  }
  fmt::print(stderr, "{}kernel-code: the run's messages are in {}\n",
             tail.substr(tail.find('\n') + 1), log.string());
}

// The engine's run on a thread of its own; its exit code once done().
class EngineThread {
 public:
  EngineThread(const GlobalOptions& g, const OptimizeOptions& o, const FrontEnd& fe)
      : thread_([this, &g, &o, &fe] {
          try {
            code_ = run_optimize(g, o, fe);
          } catch (const std::exception& e) {
            fmt::print(stderr, "kernel-code: internal error: {}\n", e.what());
            code_ = 1;
          }
          done_ = true;
        }) {}
  ~EngineThread() {
    if (thread_.joinable()) thread_.join();
  }
  bool done() const { return done_; }
  int code() const { return code_; }  // valid once done()

 private:
  std::atomic<int> code_{1};
  std::atomic<bool> done_{false};
  std::thread thread_;  // last: starts once the rest is ready
};

// The session's id, told by the engine's thread, read by the UI's.
class SessionId {
 public:
  void set(const std::string& id) {
    std::lock_guard lock(mu_);
    id_ = id;
  }
  std::string get() const {
    std::lock_guard lock(mu_);
    return id_;
  }

 private:
  mutable std::mutex mu_;
  std::string id_;
};

// The store the flags name (as the engine opens it), for the UI thread's reads.
std::optional<store::Store> open_for_reading(const GlobalOptions& g) {
  auto cfg = config::load_default();
  if (!cfg) return std::nullopt;
  auto st = open_store(g, *cfg);
  if (!st) return std::nullopt;
  return std::move(*st);
}

// One line after the screen is down: how the session ended and how to continue it.
void print_summary(const tui::Snapshot& s, tui::Ending ending) {
  const std::string& id = s.info.session;
  if (id.empty()) return;
  std::string best =
      s.standing.best_speedup ? fmt::format("{:.2f}x", *s.standing.best_speedup) : "none";
  std::string how = s.stopped ? *s.stopped : "ended";
  fmt::print(stderr, "kernel-code: session {}: {} after {} attempt{}, best {}\n", id, how,
             s.attempts.size(), s.attempts.size() == 1 ? "" : "s", best);
  bool cut_short = !s.stopped || *s.stopped == "interrupted" || *s.stopped == "stopped";
  if (ending != tui::Ending::Closed && cut_short)
    fmt::print(stderr, "kernel-code: continue it with `kernel-code optimize --resume {}`\n", id);
}

// Feeds `model` the events the session recorded since the last call: every 250 ms (watch), or
// all at once (the earlier runs of a session that kernel-code resumes).
class Follow {
 public:
  Follow(const std::filesystem::path& db, const std::string& session, tui::RunModel& model)
      : follower_(db, session), model_(model) {}
  void operator()() {
    auto now = std::chrono::steady_clock::now();
    if (now < next_) return;
    next_ = now + kPollEvery;
    catch_up(8);  // a long session's history: a few batches a turn
  }
  // Reads at most `rounds` batches; false when a read failed (the model has a warning).
  bool catch_up(int rounds) {
    constexpr int kBatch = 1000;
    for (int round = 0; round < rounds; ++round) {
      auto rows = follower_.poll(kBatch);
      if (!rows) {
        if (!failed_) model_.warning("reading the session's events: " + rows.error().message);
        failed_ = true;
        return false;
      }
      failed_ = false;
      for (const auto& e : *rows) optimize::replay_event(e, model_);
      if (static_cast<int>(rows->size()) < kBatch) break;
    }
    return true;
  }

 private:
  optimize::EventFollower follower_;
  tui::RunModel& model_;
  std::chrono::steady_clock::time_point next_{};
  bool failed_ = false;  // warned once until a poll succeeds again
};

int optimize_in_terminal(const GlobalOptions& g, const OptimizeOptions& o) {
  if (o.json)
    return refuse(
        "--json belongs to `openkernel optimize`: kernel-code shows the run on the "
        "terminal");
  if (!isatty(STDOUT_FILENO)) return refuse_non_terminal();
  auto log = stderr_log();
  auto term = tui::Terminal::open(log);
  if (!term) return report_error(term.error());

  tui::RunModel model;
  if (!o.resume.empty())  // the session's earlier runs are not events of this one: from the store
    if (auto st = open_for_reading(g))
      Follow(st->path(), o.resume, model).catch_up(std::numeric_limits<int>::max());
  optimize::Control control;
  SessionId session;
  FrontEnd fe;
  fe.observer = &model;
  fe.control = &control;
  fe.quiet = true;
  fe.print_report = false;
  fe.handle_interrupt = false;  // the Terminal's handlers: they restore the screen first
  fe.on_session = [&session](const std::string& id) { session.set(id); };
  EngineThread engine(g, o, fe);

  tui::Run run;
  run.model = &model;
  run.control = &control;
  run.details = tui::store_details([&g, &session]() -> std::optional<store::Store> {
    if (session.get().empty()) return std::nullopt;  // the engine has not opened the store yet
    return open_for_reading(g);
  });
  run.close = [&engine] { return engine.done() && engine.code() != 0; };
  tui::Ending ending = tui::run_ui(**term, run);
  bool waited = true;
  if (!engine.done()) {
    util::cancel_flag() = true;
    waited = tui::wait_ui(**term, run,
                          "ending the run; the session stays resumable (q again: do not wait)",
                          [&engine] { return engine.done(); });
  }
  // A signal while the run wound down after q: the signal's code, as documented.
  if (ending == tui::Ending::Quit && tui::Terminal::pending_signal() != 0)
    ending = tui::Ending::Signal;
  (*term)->restore();
  print_log(log);
  int code = tui::exit_code(ending, engine.code());
  if (!waited) {
    fmt::print(stderr,
               "kernel-code: ended without waiting for the run; `kernel-code optimize "
               "--resume {}` continues it\n",
               session.get());
    std::fflush(stderr);
    std::_Exit(code);  // the engine's thread is still running
  }
  print_summary(model.snapshot(), ending);
  return code;
}

int watch_in_terminal(const GlobalOptions& g, const std::string& session) {
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  auto st = open_store(g, *cfg);
  if (!st) return report_error(st.error());
  auto row = st->find_session(session);
  if (!row) return report_error(row.error());
  if (!*row)
    return refuse(fmt::format("no session {} in {} (`kernel-code sessions` lists them)", session,
                              st->path().string()));
  std::filesystem::path db = st->path();
  if (!isatty(STDOUT_FILENO)) return refuse_non_terminal();

  tui::RunModel model;
  Follow follow(db, session, model);
  tui::Run run;
  run.model = &model;
  run.details = tui::store_details([db]() -> std::optional<store::Store> {
    auto opened = store::Store::open(db);
    return opened ? std::optional<store::Store>(std::move(*opened)) : std::nullopt;
  });
  run.poll = [&follow] { follow(); };
  auto term = tui::Terminal::open();
  if (!term) return report_error(term.error());
  tui::Ending ending = tui::run_ui(**term, run);
  (*term)->restore();
  return tui::exit_code(ending, 0);
}

}  // namespace

void add_kernel_code_commands(CLI::App& app, GlobalOptions& g, Action& action) {
  auto o = std::make_shared<OptimizeOptions>();
  auto* cmd = app.add_subcommand(
      "optimize",
      "Run `openkernel optimize` (the same flags) inside a full-screen terminal UI: watch the "
      "agents, attempts and profiles; p pauses, s stops, q quits (the session stays resumable)");
  add_optimize_flags(cmd, *o, g);
  cmd->callback([&g, &action, o] { action = [&g, o] { return optimize_in_terminal(g, *o); }; });

  auto session = std::make_shared<std::string>();
  auto* watch = app.add_subcommand(
      "watch", "Follow a session that another process runs (or that ended) in the terminal UI");
  watch->add_option("session", *session, "The session's id (`kernel-code sessions` lists them)")
      ->required();
  watch->add_option("--db", g.db, "Store database");
  watch->callback([&g, &action, session] {
    action = [&g, session] { return watch_in_terminal(g, *session); };
  });
}

}  // namespace ok::cli
