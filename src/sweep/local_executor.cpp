// The local executor: one `openkernel optimize` child per slot (a GPU, or a CPU job), all writing
// the sweep's store (SQLite WAL; one machine).
#include <fmt/core.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "sweep/executor.hpp"
#include "sweep/task_files.hpp"
#include "util/subprocess.hpp"

namespace ok::sweep {

namespace {

using namespace files;
using Clock = std::chrono::steady_clock;

constexpr int kInterrupted = 130;

// optimize ended as on Ctrl-C: exit 130, or killed by SIGINT before it installed its handler.
bool interrupted_exit(const util::ExitStatus& s) {
  return (s.exited && s.code == kInterrupted) || (!s.exited && s.code == SIGINT);
}

// Why a run whose report did not say finished ended: its exit, then the report's error or else
// the log's last line.
std::string why_unfinished(const Task& t, const util::ExitStatus& status) {
  std::string why = status.exited && status.code == 0
                        ? "optimize exited 0 but its report says the session did not finish"
                        : "optimize " + status.describe();
  if (std::string error = report_error(t); !error.empty())
    why += ": " + error;
  else if (auto tail = log_tail(t.dir / kLog, 400); !tail.empty())
    why += ": " + tail.substr(tail.rfind('\n') == std::string::npos ? 0 : tail.rfind('\n') + 1);
  return why;
}

class LocalExecutor final : public Executor {
 public:
  explicit LocalExecutor(const Options& o) : o_(o) {
    std::vector<std::string> hosts = o.eval_hosts;
    if (hosts.empty()) hosts.push_back("");
    for (const auto& host : hosts) {
      for (const auto& g : o.gpus) slots_.push_back(Slot{g, host, std::nullopt, nullptr, {}});
      if (o.gpus.empty() && !host.empty())
        slots_.push_back(Slot{"", host, std::nullopt, nullptr, {}});
    }
    if (slots_.empty())
      for (int i = 0; i < std::max(1, o.jobs); ++i) slots_.push_back(Slot{});
  }

  util::Result<void> begin(const Plan& plan, const Notify& notify) override {
    lock_fd_ = plan.lock_fd;
    notify("planned", nullptr,
           fmt::format("{} slot{}", slots_.size(), slots_.size() == 1 ? "" : "s"));
    return {};
  }

  std::filesystem::path store_of(const Task&) const override { return o_.db; }

  bool can_start() const override { return free_slot() < slots_.size(); }

  util::Result<Started> start(Task& t, const std::vector<std::string>& argv) override {
    Slot* s = &slots_.at(free_slot());
    util::SpawnOptions so;
    so.argv = argv;
    if (!s->host.empty()) so.argv.insert(so.argv.end(), {"--eval-host", s->host});
    // Children hold the sweep's lock too: after kill -9 of the sweep, a re-run waits (is
    // refused) until they have stopped, instead of resuming a session they still write.
    so.inherit_fds = {lock_fd_};
    if (!s->gpu.empty()) so.env_set["CUDA_VISIBLE_DEVICES"] = s->gpu;
    so.stdout_file = t.dir / kStdout;
    // If the sweep is killed (even with SIGKILL), its children stop as on Ctrl-C: they keep
    // their best and leave their sessions resumable, and no orphan races the next run.
    so.parent_death_signal = SIGINT;
    so.stderr_file = t.dir / kLog;
    auto child = util::Subprocess::spawn(so);
    if (!child) return std::unexpected(child.error());
    child->close_stdin();
    s->child = std::move(*child);
    s->task = &t;
    s->started = Clock::now();
    return Started{s->label(), true};
  }

  util::Result<std::optional<Finished>> wait(const Notify&) override {
    for (auto& s : slots_) {
      if (!s.child) continue;
      auto status = s.child->try_wait();
      if (!status) continue;
      Finished f{s.task, s.label(), interrupted_exit(*status), why_unfinished(*s.task, *status),
                 std::chrono::duration<double>(Clock::now() - s.started).count()};
      s.child.reset();
      s.task = nullptr;
      return f;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return std::nullopt;
  }

  std::string cancel_all() override {
    for (auto& s : slots_)
      if (s.child) s.child->kill_group(SIGINT);
    return "interrupted: running problems keep their sessions";
  }

  int slots() const override { return static_cast<int>(slots_.size()); }

 private:
  struct Slot {
    std::string gpu;   // empty: the environment as inherited
    std::string host;  // --eval-host of its runs; empty: this machine
    std::optional<util::Subprocess> child;
    Task* task = nullptr;
    Clock::time_point started;
    std::string label() const { return host.empty() ? gpu : host + (gpu.empty() ? "" : "#" + gpu); }
  };

  // The first slot without a child; slots_.size() when all are busy.
  size_t free_slot() const {
    size_t i = 0;
    while (i < slots_.size() && slots_[i].child) ++i;
    return i;
  }

  const Options& o_;
  std::vector<Slot> slots_;
  int lock_fd_ = -1;
};

}  // namespace

std::unique_ptr<Executor> local_executor(const Options& o) {
  return std::make_unique<LocalExecutor>(o);
}

}  // namespace ok::sweep
