#include <fcntl.h>
#include <fmt/core.h>
#include <sys/file.h>
#include <unistd.h>

#include "store/store.hpp"
#include "sweep/executor.hpp"
#include "sweep/task_files.hpp"
#include "util/strings.hpp"

namespace ok::sweep {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace files;

namespace {

// Holds an exclusive lock on WORK/.lock for the life of a run.
class Lock {
 public:
  static util::Result<Lock> take(const fs::path& work) {
    fs::path p = work / ".lock";
    int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return util::fail(util::ErrorKind::kBadInput, "cannot open " + p.string());
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return util::fail(
          util::ErrorKind::kUsage,
          fmt::format("another sweep is running into {} (lock {})", work.string(), p.string()));
    }
    return Lock(fd);
  }
  Lock(Lock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Lock& operator=(Lock&&) = delete;
  int fd() const { return fd_; }
  ~Lock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  explicit Lock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// One backend and model per results file, or its rows would not be comparable: checked (and
// recorded by the first sweep) under the lock.
util::Result<void> check_meta(const Options& o, const fs::path& work) {
  fs::path meta = work / "sweep.json";
  json m = read_json(meta);
  if (m.is_object()) {
    std::string b = m.value("backend", ""), mo = m.value("model", "");
    if (b != o.backend || mo != o.model)
      return util::fail(
          util::ErrorKind::kUsage,
          fmt::format("{} holds a sweep with backend {} and model {}; this one asks for "
                      "backend {} and model {}: choose another --output",
                      o.output.string(), b, mo, o.backend, o.model));
    return {};
  }
  return write_atomic(
      meta, json{{"version", 1}, {"backend", o.backend}, {"model", o.model}}.dump(2) + "\n");
}

std::string new_task_session(const Task& t) {
  return util::time_id("w") + fmt::format("-L{}-{:03}", t.level, t.number);
}

// Whether `db` records session `id` (a task that died before its first write has none). An
// unreadable store is an error, not "absent": starting the session afresh would be refused.
util::Result<bool> store_has_session(const fs::path& db, const std::string& id) {
  if (id.empty() || !fs::exists(db)) return false;
  auto st = store::Store::open(db);
  if (!st) return std::unexpected(st.error());
  auto row = st->find_session(id);
  if (!row) return std::unexpected(row.error());
  return row->has_value();
}

// Before a task runs again: its previous report (an interrupted session's) moves aside, so a run
// that fails without writing a new one is not mistaken for the old result.
void set_aside_report(const Task& t) {
  std::error_code ec;
  if (fs::exists(t.dir / kReport, ec)) fs::rename(t.dir / kReport, t.dir / "report.prev.json", ec);
}

// One run of the tasks left: the state behind Progress and the Outcome.
class Driver {
 public:
  Driver(const Options& o, std::vector<Task>& tasks, Executor& executor, const Observer& observer)
      : o_(o), tasks_(tasks), executor_(executor), observer_(observer) {}

  util::Result<Outcome> run(const std::atomic<bool>* cancel, int lock_fd) {
    out_.planned = static_cast<int>(tasks_.size());
    for (auto& t : tasks_) {
      if (task_state(t) == TaskState::kDone)
        ++out_.skipped;
      else
        pending_.push_back(&t);
    }
    done_ = out_.skipped;
    if (auto r = rewrite_results(); !r) return std::unexpected(r.error());
    const Notify notify = [this](std::string_view kind, const Task* t, std::string text) {
      if (kind == "planned")
        text = fmt::format("{} problems, {} done before, {}", out_.planned, out_.skipped, text);
      emit(std::string(kind), t, "", std::move(text));
    };
    if (auto b = executor_.begin({tasks_, pending_.size(), lock_fd}, notify); !b)
      return std::unexpected(b.error());
    bool signalled = false;
    while (true) {
      const bool stopping = cancel && cancel->load();
      if (stopping && !signalled) {
        signalled = true;
        out_.interrupted = true;
        emit("stopped", nullptr, "", executor_.cancel_all());
      }
      while (!stopping && next_ < pending_.size() && executor_.can_start())
        if (auto s = start(*pending_[next_++]); !s) return std::unexpected(s.error());
      const bool idle = in_flight_ == 0 && !executor_.busy();
      if (idle && (stopping || next_ >= pending_.size())) break;
      if (idle)
        return util::fail(util::ErrorKind::kInternal,
                          "the sweep's executor neither runs nor takes a task");
      auto f = executor_.wait(notify);
      if (!f) return std::unexpected(f.error());
      if (*f) finish(**f);
    }
    if (auto r = rewrite_results(); !r) return std::unexpected(r.error());
    return out_;
  }

 private:
  util::Result<void> rewrite_results() {
    auto rows = write_results(o_.output);
    if (!rows) return std::unexpected(rows.error());
    out_.rows = std::move(*rows);
    return {};
  }

  // Prepares the task's folder and session and hands it to the executor. Only a session file
  // that cannot be written ends the sweep; other failures fail the task.
  util::Result<void> start(Task& t) {
    std::error_code ec;
    fs::create_directories(t.dir, ec);
    const fs::path db = executor_.store_of(t);
    auto known = store_has_session(db, t.session);
    if (!known) {
      failed_to_start(t,
                      "cannot read the session from " + db.string() + ": " + known.error().message);
      return {};
    }
    const bool resume = *known;
    if (!resume && t.session.empty()) t.session = new_task_session(t);
    if (auto w = write_atomic(t.dir / kSession, t.session + "\n"); !w) return w;
    set_aside_report(t);
    auto s = executor_.start(t, task_command(o_, t, resume, db));
    if (!s) {
      failed_to_start(t, s.error().message);
      return {};
    }
    ++in_flight_;
    if (s->running) emit("started", &t, s->slot, resume ? "resuming " + t.session : t.session);
    return {};
  }

  void failed_to_start(const Task& t, const std::string& why) {
    record_failure(o_, t, why);
    ++out_.failed;
    ++done_;
    emit("failed", &t, "", why);
  }

  // A task's end: done when its report says finished; else interrupted (resumable, no error) or
  // failed (error.json says why).
  void finish(const Finished& f) {
    const Task& t = *f.task;
    --in_flight_;
    const bool done = task_state(t) == TaskState::kDone;
    std::error_code ec;
    if (done)
      fs::remove(t.dir / kError, ec);
    else if (!f.interrupted)
      record_failure(o_, t, f.why);
    if (f.interrupted) {
      out_.interrupted = true;
    } else {
      ++done_;
      ++out_.ran;
      if (f.wall_s) {
        walls_ += *f.wall_s;
        ++timed_;
      }
    }
    if (!done && !f.interrupted) ++out_.failed;
    (void)rewrite_results();
    emit(done ? "finished" : (f.interrupted ? "stopped" : "failed"), &t, f.slot, done ? "" : f.why,
         f.wall_s.value_or(0));
  }

  void emit(std::string kind, const Task* t, std::string slot, std::string text, double wall = 0) {
    if (!observer_) return;
    Progress p;
    p.kind = std::move(kind);
    p.task = t;
    if (t) p.row = task_row(*t);
    p.slot = std::move(slot);
    p.text = std::move(text);
    p.done = done_;
    p.total = out_.planned;
    p.running = in_flight_;
    p.scored = static_cast<int>(out_.rows.size());
    for (const auto& r : out_.rows)
      if (r.correct && r.speedup_eager && *r.speedup_eager > 1.0) ++p.fast_1;
    p.wall_s = wall;
    if (timed_ > 0) {
      const double left = static_cast<double>(pending_.size() - next_) + in_flight_;
      p.eta_s = walls_ / timed_ * left / std::max(1, executor_.slots());
    }
    observer_(p);
  }

  const Options& o_;
  std::vector<Task>& tasks_;
  Executor& executor_;
  const Observer& observer_;
  Outcome out_;
  std::vector<Task*> pending_;
  size_t next_ = 0;  // into pending_
  int done_ = 0, in_flight_ = 0;
  double walls_ = 0;  // wall time of the timed tasks that ran
  int timed_ = 0;
};

}  // namespace

util::Result<Outcome> run(const Options& o, std::vector<Task> tasks,
                          const std::atomic<bool>* cancel, const Observer& observer) {
  std::unique_ptr<Executor> executor;
  if (o.executor == "local")
    executor = local_executor(o);
  else if (o.executor == "slurm")
    executor = slurm_executor(o);
  else
    return util::fail(util::ErrorKind::kUsage, "unknown executor " + o.executor);
  return drive(o, std::move(tasks), *executor, cancel, observer);
}

util::Result<Outcome> drive(const Options& o, std::vector<Task> tasks, Executor& executor,
                            const std::atomic<bool>* cancel, const Observer& observer) {
  fs::path work = fs::absolute(work_dir(o.output));
  auto lock = Lock::take(work);
  if (!lock) return std::unexpected(lock.error());
  if (auto m = check_meta(o, work); !m) return std::unexpected(m.error());
  return Driver(o, tasks, executor, observer).run(cancel, lock->fd());
}

}  // namespace ok::sweep
