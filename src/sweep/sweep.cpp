#include "sweep/sweep.hpp"

#include <fcntl.h>
#include <fmt/chrono.h>
#include <fmt/core.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "problems/kernelbench.hpp"
#include "store/store.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

namespace ok::sweep {

namespace fs = std::filesystem;
using nlohmann::json;
using util::ErrorKind;
using util::fail;

namespace {

constexpr int kInterrupted = 130;
constexpr const char* kReport = "report.json";
constexpr const char* kError = "error.json";
constexpr const char* kSession = "session";
constexpr const char* kLog = "optimize.log";
constexpr const char* kTaskStore = "store.db";

std::string read_text(const fs::path& p) {
  auto r = util::read_file(p);
  return r ? util::trim(*r) : std::string();
}

json read_json(const fs::path& p) {
  auto r = util::read_file(p);
  if (!r) return nullptr;
  json j = json::parse(*r, nullptr, false);
  return j.is_discarded() ? json(nullptr) : j;
}

std::optional<double> number(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  double v = j[key].get<double>();
  if (!std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

util::Result<void> write_atomic(const fs::path& p, std::string_view content) {
  fs::path tmp = p;
  tmp += fmt::format(".tmp{}", ::getpid());
  if (auto w = util::write_file(tmp, content); !w) return w;
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec)
    return fail(ErrorKind::kBadInput, fmt::format("cannot write {}: {}", p.string(), ec.message()));
  return {};
}

std::string task_dir_name(int level, int number, const std::string& name) {
  return fmt::format("L{}_{:03}_{}", level, number, name);
}

// The last lines of a log, for error.json and messages.
std::string log_tail(const fs::path& p, size_t max = 1500) {
  auto r = util::read_file(p);
  if (!r) return "";
  std::string s = util::trim(*r);
  if (s.size() > max) s = "..." + s.substr(s.size() - max);
  return s;
}

// Holds an exclusive lock on WORK/.lock for the life of a run.
class Lock {
 public:
  static util::Result<Lock> take(const fs::path& work) {
    fs::path p = work / ".lock";
    int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return fail(ErrorKind::kBadInput, "cannot open " + p.string());
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return fail(ErrorKind::kUsage, fmt::format("another sweep is running into {} (lock {})",
                                                 work.string(), p.string()));
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

// optimize ended as on Ctrl-C: exit 130, or killed by SIGINT before it installed its handler.
bool interrupted_exit(const util::ExitStatus& s) {
  return (s.exited && s.code == kInterrupted) || (!s.exited && s.code == SIGINT);
}

// Writes error.json for a run that ended without a report.
void record_failure(const Options& o, const Task& t, const std::string& why) {
  json e = {{"verdict", "error"},   {"level", t.level},     {"problem", t.number},
            {"name", t.name},       {"backend", o.backend}, {"model", o.model},
            {"session", t.session}, {"message", why},       {"log_tail", log_tail(t.dir / kLog)}};
  (void)write_atomic(t.dir / kError, e.dump(2) + "\n");
}

// After a run: done, or why not (recorded in error.json).
bool settle(const Options& o, const Task& t, const util::ExitStatus& status, std::string& why) {
  if (task_state(t) == TaskState::kDone) {
    std::error_code ec;
    fs::remove(t.dir / kError, ec);
    return true;
  }
  json report = read_json(t.dir / kReport);
  if (status.exited && status.code == 0)
    why = "optimize exited 0 but its report says the session did not finish";
  else
    why = "optimize " + status.describe();
  if (report.is_object() && report.contains("error") && report["error"].is_string())
    why += ": " + report["error"].get<std::string>();
  else if (auto tail = log_tail(t.dir / kLog, 400); !tail.empty())
    why += ": " + tail.substr(tail.rfind('\n') == std::string::npos ? 0 : tail.rfind('\n') + 1);
  if (!interrupted_exit(status)) record_failure(o, t, why);
  return false;
}

struct Tally {
  int fast_1 = 0, scored = 0;
};

Tally tally(const std::vector<score::Row>& rows) {
  Tally t;
  t.scored = static_cast<int>(rows.size());
  for (const auto& r : rows)
    if (r.correct && r.speedup_eager && *r.speedup_eager > 1.0) ++t.fast_1;
  return t;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

// Whether SLURM still lists any task of array `job`: true/false, or nullopt when squeue failed
// for another reason than an unknown (finished and purged) job id; callers retry those.
std::optional<bool> slurm_job_live(const std::string& job) {
  auto q = util::run_capture({"squeue", "-h", "-j", job, "-o", "%i %T"}, std::chrono::seconds(60),
                             /*merge_stderr=*/true);
  if (!q) return std::nullopt;
  std::string text = util::trim(q->output);
  if (q->status.exited && q->status.code == 0) return !text.empty();
  if (text.find("Invalid job id") != std::string::npos) return false;
  return std::nullopt;
}

// Gathers a SLURM task's own store into the sweep's (idempotent: a session copied again
// replaces its earlier copy).
void merge_task_store(store::Store& main, const Task& t, std::string& warning) {
  const fs::path db = t.dir / kTaskStore;
  if (!fs::exists(db)) return;
  if (auto m = main.merge_sessions(db); !m)
    warning = "could not merge " + db.string() + ": " + m.error().message;
}

// One backend and model per results file, or its rows would not be comparable: checked (and
// recorded by the first sweep) under the lock.
util::Result<void> check_meta(const Options& o, const fs::path& work) {
  fs::path meta = work / "sweep.json";
  json m = read_json(meta);
  if (m.is_object()) {
    std::string b = m.value("backend", ""), mo = m.value("model", "");
    if (b != o.backend || mo != o.model)
      return fail(ErrorKind::kUsage,
                  fmt::format("{} holds a sweep with backend {} and model {}; this one asks for "
                              "backend {} and model {}: choose another --output",
                              o.output.string(), b, mo, o.backend, o.model));
    return {};
  }
  return write_atomic(
      meta, json{{"version", 1}, {"backend", o.backend}, {"model", o.model}}.dump(2) + "\n");
}

// The tasks left to run; counts the planned and the done ones in `out`.
std::vector<Task*> not_done(std::vector<Task>& tasks, Outcome& out) {
  out.planned = static_cast<int>(tasks.size());
  std::vector<Task*> pending;
  for (auto& t : tasks) {
    if (task_state(t) == TaskState::kDone)
      ++out.skipped;
    else
      pending.push_back(&t);
  }
  return pending;
}

}  // namespace

util::Result<std::vector<int>> parse_selection(std::string_view text) {
  std::string spec = util::trim(text), error;
  std::vector<int> out;
  if (spec.empty()) return fail(ErrorKind::kUsage, "empty problem selection (use e.g. 1-20,35)");
  if (!util::parse_id_ranges(spec, out, error))
    return fail(ErrorKind::kUsage,
                fmt::format("bad problem selection '{}': {} (use e.g. 1-20,35)", spec, error));
  if (!out.empty() && out.front() < 1)
    return fail(ErrorKind::kUsage,
                fmt::format("bad problem selection '{}': problem numbers start at 1", spec));
  return out;
}

fs::path work_dir(const fs::path& output) {
  fs::path p = output;
  p.replace_extension();
  if (p == output) p += ".d";  // an output without an extension
  return p;
}

TaskState task_state(const Task& t) {
  json r = read_json(t.dir / kReport);
  if (r.is_object() && r.value("status", "") == "finished") return TaskState::kDone;
  if (r.is_object() || fs::exists(t.dir / kSession) || fs::exists(t.dir / kError))
    return TaskState::kStarted;
  return TaskState::kNew;
}

std::optional<score::Row> task_row(const Task& t) {
  score::Row row;
  row.level = t.level;
  row.problem_id = t.number;
  row.name = t.name;
  json r = read_json(t.dir / kReport);
  // A session stopped before its first attempt says nothing about the problem yet: no row.
  if (r.is_object() && r.value("status", "") != "finished" && r.value("attempts", 0) == 0)
    r = nullptr;
  if (r.is_object()) {
    row.backend = r.value("backend", "");
    row.model = r.value("model", "");
    row.verdict = r.value("verdict", "");
    row.correct = row.verdict == "correct";
    row.eager_us = number(r, "eager_runtime_us");
    row.compile_us = number(r, "compile_runtime_us");
    if (row.correct) {
      row.runtime_us = number(r, "runtime_us");
      row.speedup_eager = number(r, "speedup");
      row.speedup_compile = number(r, "speedup_compile");
      if (row.speedup_eager && *row.speedup_eager <= 0) row.speedup_eager.reset();
      if (row.speedup_compile && *row.speedup_compile <= 0) row.speedup_compile.reset();
    }
    if (r.contains("attempts") && r["attempts"].is_number_integer())
      row.attempts = r["attempts"].get<int>();
    row.cost_usd = number(r, "cost_usd");
    std::vector<std::string> flags;
    if (r.contains("flags") && r["flags"].is_array())
      for (const auto& f : r["flags"])
        if (f.is_string()) flags.push_back(f.get<std::string>());
    row.flags = util::join(flags, ",");
    return row;
  }
  json e = read_json(t.dir / kError);
  if (!e.is_object()) return std::nullopt;
  row.backend = e.value("backend", "");
  row.model = e.value("model", "");
  row.verdict = "error";
  row.attempts = 0;
  return row;
}

util::Result<std::vector<score::Row>> write_results(const fs::path& output) {
  static const std::regex kTaskDir(R"(L(\d+)_(\d+)_(.+))");
  std::vector<score::Row> rows;
  std::vector<fs::path> dirs;  // the folder of each row
  fs::path work = work_dir(output);
  std::error_code ec;
  if (fs::is_directory(work, ec)) {
    for (const auto& entry : fs::directory_iterator(work, ec)) {
      std::smatch m;
      std::string name = entry.path().filename().string();
      if (!entry.is_directory() || !std::regex_match(name, m, kTaskDir)) continue;
      Task t;
      t.level = std::stoi(m[1].str());
      t.number = std::stoi(m[2].str());
      t.name = m[3].str();
      t.dir = entry.path();
      auto row = task_row(t);
      if (!row) continue;
      // Two folders for one problem (a renamed KernelBench file): the newest run wins, so the
      // TSV keeps one row per problem.
      auto stamp = [&ec](const fs::path& d) {
        for (const char* f : {kReport, kError})
          if (auto w = fs::last_write_time(d / f, ec); !ec) return w;
        return fs::file_time_type::min();
      };
      auto same = std::find_if(rows.begin(), rows.end(), [&](const score::Row& r) {
        return r.level == row->level && r.problem_id == row->problem_id;
      });
      if (same == rows.end()) {
        rows.push_back(std::move(*row));
        dirs.push_back(t.dir);
      } else if (stamp(t.dir) > stamp(dirs[same - rows.begin()])) {
        *same = std::move(*row);
        dirs[same - rows.begin()] = t.dir;
      }
    }
  }
  std::sort(rows.begin(), rows.end(), [](const score::Row& a, const score::Row& b) {
    return std::tie(a.level, a.problem_id) < std::tie(b.level, b.problem_id);
  });
  if (output.has_parent_path()) fs::create_directories(output.parent_path(), ec);
  if (auto w = write_atomic(output, score::format_tsv(rows)); !w) return std::unexpected(w.error());
  return rows;
}

std::vector<std::string> task_command(const Options& o, const Task& t, bool resume,
                                      const fs::path& db) {
  std::vector<std::string> a = {o.binary.string(), "optimize", "--json", "--db", db.string()};
  auto add = [&a](std::string flag, std::string value) {
    a.push_back(std::move(flag));
    a.push_back(std::move(value));
  };
  if (resume) {
    add("--resume", t.session);
    if (o.iterations > 0) add("--iterations", std::to_string(o.iterations));
  } else {
    add("--session", t.session);
    add("--level", std::to_string(t.level));
    add("--problem", std::to_string(t.number));
    add("--kernelbench-dir", o.kernelbench_dir.string());
    add("--backend", o.backend);
    add("--model", o.model);
    add("--mode", o.mode);
    if (o.iterations > 0) add("--iterations", std::to_string(o.iterations));
    add("--out", t.dir.string());
    // Each problem its own seed, reproducible from the sweep's.
    add("--seed", std::to_string(o.seed + static_cast<uint64_t>(t.level) * 1000 + t.number));
    add("--trials", std::to_string(o.trials));
    add("--timeout", fmt::format("{}", o.timeout_s));
    add("--timing-budget", fmt::format("{}", o.timing_budget_s));
    if (!o.base_url.empty()) add("--base-url", o.base_url);
    if (o.no_sandbox) a.push_back("--no-sandbox");
  }
  if (o.budget_usd) add("--budget-usd", fmt::format("{}", *o.budget_usd));
  if (!o.python.empty()) add("--python", o.python);
  return a;
}

util::Result<std::vector<Task>> plan(const Options& o) {
  if (o.level < 1) return fail(ErrorKind::kUsage, "--level must be 1 or more");
  auto chosen = problems::select_problems(o.kernelbench_dir, o.level, o.problems);
  if (!chosen) return std::unexpected(chosen.error());

  fs::path work = work_dir(o.output);
  std::error_code ec;
  fs::create_directories(work, ec);
  if (ec)
    return fail(ErrorKind::kBadInput,
                fmt::format("cannot create {}: {}", work.string(), ec.message()));
  std::vector<Task> tasks;
  for (const auto& p : *chosen) {
    Task t;
    t.level = o.level;
    t.number = p.number;
    t.name = p.name;
    t.reference = fs::absolute(p.path);
    t.dir = fs::absolute(work / task_dir_name(o.level, p.number, p.name));
    t.session = read_text(t.dir / kSession);
    tasks.push_back(std::move(t));
  }
  return tasks;
}

util::Result<Outcome> run_local(const Options& o, std::vector<Task> tasks,
                                const std::atomic<bool>* cancel, const Observer& observer) {
  fs::path work = work_dir(o.output);
  auto lock = Lock::take(work);
  if (!lock) return std::unexpected(lock.error());
  if (auto m = check_meta(o, work); !m) return std::unexpected(m.error());

  struct Slot {
    std::string gpu;  // empty: the environment as inherited
    std::optional<util::Subprocess> child;
    Task* task = nullptr;
    std::chrono::steady_clock::time_point started;
  };
  std::vector<Slot> slots;
  for (const auto& g : o.gpus) slots.push_back(Slot{g, std::nullopt, nullptr, {}});
  if (slots.empty())
    for (int i = 0; i < std::max(1, o.jobs); ++i) slots.push_back(Slot{});

  Outcome out;
  std::vector<Task*> pending = not_done(tasks, out);
  auto rows = write_results(o.output);
  if (!rows) return std::unexpected(rows.error());
  out.rows = *rows;

  const int total = out.planned;
  int done = out.skipped, running = 0;
  size_t next = 0;  // into pending
  double walls = 0;
  int timed = 0;
  auto emit = [&](std::string kind, const Task* t, std::string slot, std::string text, double wall,
                  std::optional<score::Row> row) {
    if (!observer) return;
    Progress p;
    p.kind = std::move(kind);
    p.task = t;
    p.row = std::move(row);
    p.slot = std::move(slot);
    p.text = std::move(text);
    p.done = done;
    p.total = total;
    p.running = running;
    Tally ty = tally(out.rows);
    p.fast_1 = ty.fast_1;
    p.scored = ty.scored;
    p.wall_s = wall;
    if (timed > 0) {
      double left = static_cast<double>(pending.size() - next) + running;
      p.eta_s = walls / timed * left / static_cast<double>(slots.size());
    }
    observer(p);
  };
  emit("planned", nullptr, "",
       fmt::format("{} problems, {} done before, {} slot{}", total, out.skipped, slots.size(),
                   slots.size() == 1 ? "" : "s"),
       0, std::nullopt);

  bool signalled = false;
  while (true) {
    const bool stopping = cancel && cancel->load();
    if (stopping && !signalled) {
      signalled = true;
      out.interrupted = true;
      for (auto& s : slots)
        if (s.child) s.child->kill_group(SIGINT);
      emit("stopped", nullptr, "", "interrupted: running problems keep their sessions", 0,
           std::nullopt);
    }
    // Fill free slots.
    for (auto& s : slots) {
      if (stopping || s.child || next >= pending.size()) continue;
      Task& t = *pending[next++];
      std::error_code ec;
      fs::create_directories(t.dir, ec);
      auto known = store_has_session(o.db, t.session);
      if (!known) {
        std::string why =
            "cannot read the session from " + o.db.string() + ": " + known.error().message;
        record_failure(o, t, why);
        ++out.failed;
        ++done;
        emit("failed", &t, s.gpu, why, 0, std::nullopt);
        continue;
      }
      const bool resume = *known;
      if (!resume && t.session.empty()) t.session = new_task_session(t);
      if (auto w = write_atomic(t.dir / kSession, t.session + "\n"); !w)
        return std::unexpected(w.error());
      set_aside_report(t);
      util::SpawnOptions so;
      so.argv = task_command(o, t, resume, o.db);
      // Children hold the sweep's lock too: after kill -9 of the sweep, a re-run waits (is
      // refused) until they have stopped, instead of resuming a session they still write.
      so.inherit_fds = {lock->fd()};
      if (!s.gpu.empty()) so.env_set["CUDA_VISIBLE_DEVICES"] = s.gpu;
      so.stdout_file = t.dir / "stdout.json";
      // If the sweep is killed (even with SIGKILL), its children stop as on Ctrl-C: they keep
      // their best and leave their sessions resumable, and no orphan races the next run.
      so.parent_death_signal = SIGINT;
      so.stderr_file = t.dir / kLog;
      auto child = util::Subprocess::spawn(so);
      if (!child) {
        record_failure(o, t, child.error().message);
        ++out.failed;
        ++done;
        emit("failed", &t, s.gpu, child.error().message, 0, std::nullopt);
        continue;
      }
      child->close_stdin();
      s.child = std::move(*child);
      s.task = &t;
      s.started = std::chrono::steady_clock::now();
      ++running;
      emit("started", &t, s.gpu, resume ? "resuming " + t.session : t.session, 0, std::nullopt);
    }
    if (running == 0 && (stopping || next >= pending.size())) break;
    // Reap finished children.
    bool reaped = false;
    for (auto& s : slots) {
      if (!s.child) continue;
      auto st = s.child->try_wait();
      if (!st) continue;
      reaped = true;
      Task& t = *s.task;
      double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
      s.child.reset();
      s.task = nullptr;
      --running;
      std::string why;
      const bool ok = settle(o, t, *st, why);
      const bool interrupted = interrupted_exit(*st);
      if (interrupted) out.interrupted = true;
      if (!interrupted) {
        ++done;
        walls += wall;
        ++timed;
        ++out.ran;
      }
      if (!ok && !interrupted) ++out.failed;
      auto r = write_results(o.output);
      if (r) out.rows = *r;
      auto row = task_row(t);
      emit(ok ? "finished" : (interrupted ? "stopped" : "failed"), &t, s.gpu, why, wall, row);
    }
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  auto r = write_results(o.output);
  if (!r) return std::unexpected(r.error());
  out.rows = *r;
  return out;
}

util::Result<Outcome> run_slurm(const Options& o, std::vector<Task> tasks,
                                const std::atomic<bool>* cancel, const Observer& observer) {
  fs::path work = fs::absolute(work_dir(o.output));
  auto lock = Lock::take(work);
  if (!lock) return std::unexpected(lock.error());
  if (auto m = check_meta(o, work); !m) return std::unexpected(m.error());

  Outcome out;
  std::vector<Task*> pending = not_done(tasks, out);
  auto emit = [&](std::string kind, const Task* t, std::string text, int done, int running) {
    if (!observer) return;
    Progress p;
    p.kind = std::move(kind);
    p.task = t;
    p.text = std::move(text);
    p.done = done;
    p.total = out.planned;
    p.running = running;
    Tally ty = tally(out.rows);
    p.fast_1 = ty.fast_1;
    p.scored = ty.scored;
    if (t) p.row = task_row(*t);
    observer(p);
  };
  auto rows = write_results(o.output);
  if (!rows) return std::unexpected(rows.error());
  out.rows = *rows;
  auto main_store = store::Store::open(o.db);
  if (!main_store) return std::unexpected(main_store.error());
  // Problems finished by an earlier array (even one whose sweep died) are merged now: the merge
  // is idempotent, and a sweep that was not there to gather them must not lose them.
  for (auto& t : tasks) {
    if (task_state(t) != TaskState::kDone) continue;
    std::string warning;
    merge_task_store(*main_store, t, warning);
    if (!warning.empty()) emit("warning", &t, warning, out.skipped, 0);
  }
  if (pending.empty()) return out;
  // An array from an earlier run that SLURM still runs would race a new one on the same sessions.
  fs::path slurm_dir = work / "slurm";
  if (std::string old = read_text(slurm_dir / "job"); !old.empty()) {
    if (auto live = slurm_job_live(old); !live || *live)
      return fail(ErrorKind::kUsage,
                  fmt::format("the SLURM array {} of an earlier run into {} is still queued or "
                              "running{}: wait for it or `scancel {}`, then re-run",
                              old, o.output.string(), live ? "" : " (squeue did not answer)", old));
  }

  // One array task per pending problem: a case statement over SLURM_ARRAY_TASK_ID, each running
  // optimize against the task's own store (SQLite's WAL cannot be shared across machines).
  std::string script = "#!/bin/bash\n# Written by `openkernel sweep --executor slurm`.\nset -u\n";
  script += "case \"${SLURM_ARRAY_TASK_ID:-}\" in\n";
  for (size_t i = 0; i < pending.size(); ++i) {
    Task& t = *pending[i];
    std::error_code ec;
    fs::create_directories(t.dir, ec);
    const fs::path db = t.dir / kTaskStore;
    auto known = store_has_session(db, t.session);
    if (!known)
      return fail(ErrorKind::kBadInput,
                  fmt::format("cannot read {}: {}", db.string(), known.error().message));
    const bool resume = *known;
    set_aside_report(t);
    if (!resume && t.session.empty()) t.session = new_task_session(t);
    if (auto w = write_atomic(t.dir / kSession, t.session + "\n"); !w)
      return std::unexpected(w.error());
    std::vector<std::string> quoted;
    for (const auto& a : task_command(o, t, resume, db)) quoted.push_back(shell_quote(a));
    script += fmt::format("  {}) exec {} > {} 2> {} ;;\n", i, util::join(quoted, " "),
                          shell_quote((t.dir / "stdout.json").string()),
                          shell_quote((t.dir / kLog).string()));
  }
  script +=
      "  *) echo \"openkernel sweep: no task ${SLURM_ARRAY_TASK_ID:-}\" >&2; exit 2 ;;\nesac\n";
  std::error_code ec;
  fs::create_directories(slurm_dir, ec);
  auto stamp = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  fs::path script_path = slurm_dir / fmt::format("array-{:%Y%m%d-%H%M%S}-{}.sh", stamp, ::getpid());
  if (auto w = util::write_file(script_path, script); !w) return std::unexpected(w.error());
  fs::permissions(script_path, fs::perms::owner_all, fs::perm_options::add, ec);

  std::vector<std::string> argv = {"sbatch",
                                   "--parsable",
                                   "--job-name",
                                   "openkernel-sweep",
                                   fmt::format("--array=0-{}", pending.size() - 1),
                                   "--output",
                                   (slurm_dir / "%A_%a.out").string()};
  bool has_gpu_request = false;
  for (const auto& a : o.slurm_args)
    if (a.rfind("--gres", 0) == 0 || a.rfind("--gpus", 0) == 0 || a.rfind("-G", 0) == 0)
      has_gpu_request = true;
  if (o.backend != "cpu" && !has_gpu_request) argv.push_back("--gres=gpu:1");
  argv.insert(argv.end(), o.slurm_args.begin(), o.slurm_args.end());
  argv.push_back(script_path.string());

  auto submitted = util::run_capture(argv, std::chrono::seconds(120), /*merge_stderr=*/true);
  if (!submitted)
    return fail(
        ErrorKind::kEnvironment,
        "cannot run sbatch (is SLURM installed and SLURM_CONF set?): " + submitted.error().message);
  std::string job = util::trim(submitted->output);
  if (!submitted->status.exited || submitted->status.code != 0 || job.empty() ||
      job.find_first_not_of("0123456789;_-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") !=
          std::string::npos)
    return fail(ErrorKind::kEnvironment, fmt::format("sbatch did not submit the sweep ({}): {}",
                                                     submitted->status.describe(), job));
  if (auto sc = job.find(';'); sc != std::string::npos) job = job.substr(0, sc);  // cluster name
  if (auto w = util::write_file(slurm_dir / "job", job + "\n"); !w)
    return std::unexpected(w.error());
  emit("planned", nullptr,
       fmt::format("{} problems, {} done before, SLURM job array {} with {} tasks", out.planned,
                   out.skipped, job, pending.size()),
       out.skipped, static_cast<int>(pending.size()));

  // Poll: the array is over when squeue lists none of its tasks (it lists only live ones; a
  // purged job id is an error, also over). Reports are announced as they appear; Ctrl-C cancels
  // the array with SIGINT, so each optimize keeps its session resumable.
  std::vector<bool> seen(pending.size(), false);
  int done = out.skipped;
  bool cancelled = false;
  auto last_poll = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  int squeue_failures = 0;
  while (true) {
    if (cancel && cancel->load() && !cancelled) {
      cancelled = true;
      out.interrupted = true;
      // Running tasks get SIGINT (optimize keeps its session resumable); tasks not started yet
      // are cancelled outright (SLURM signals only running jobs).
      (void)util::run_capture({"scancel", "--signal=INT", "--full", job}, std::chrono::seconds(30));
      (void)util::run_capture({"scancel", "--state=PENDING", job}, std::chrono::seconds(30));
      emit("stopped", nullptr, "interrupted: SLURM array " + job + " signalled", done, 0);
    }
    for (size_t i = 0; i < pending.size(); ++i) {
      if (seen[i] || task_state(*pending[i]) != TaskState::kDone) continue;
      seen[i] = true;
      ++done;
      if (auto r = write_results(o.output); r) out.rows = *r;
      emit("finished", pending[i], "", done,
           static_cast<int>(pending.size()) - (done - out.skipped));
    }
    if (std::chrono::steady_clock::now() - last_poll >= std::chrono::seconds(1)) {
      last_poll = std::chrono::steady_clock::now();
      auto live = slurm_job_live(job);
      if (live && !*live) break;
      squeue_failures = live ? 0 : squeue_failures + 1;
      if (squeue_failures >= 120)
        return fail(ErrorKind::kEnvironment,
                    fmt::format("squeue has not answered about array {} for two minutes; the "
                                "tasks may still run: re-run this command once SLURM answers",
                                job));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }

  // Gather: each task's store into the sweep's, then the verdict of each task.
  for (Task* t : pending) {
    std::string warning;
    merge_task_store(*main_store, *t, warning);
    if (!warning.empty()) emit("warning", t, warning, done, 0);
    if (task_state(*t) == TaskState::kDone) {
      std::error_code rm;
      fs::remove(t->dir / kError, rm);
      ++out.ran;
      continue;
    }
    json r = read_json(t->dir / kReport);
    if ((r.is_object() && r.value("status", "") == "interrupted") ||
        (cancelled && !r.is_object())) {
      out.interrupted = true;  // stopped by Ctrl-C, or cancelled before it started
      continue;
    }
    std::string why = "the array task ended without a finished report";
    if (r.is_object() && r.contains("error") && r["error"].is_string())
      why += ": " + r["error"].get<std::string>();
    why += fmt::format(" (see {} and {})", (t->dir / kLog).string(),
                       (slurm_dir / (job + "_*.out")).string());
    record_failure(o, *t, why);
    ++out.ran;
    ++out.failed;
    emit("failed", t, why, done, 0);
  }
  auto r = write_results(o.output);
  if (!r) return std::unexpected(r.error());
  out.rows = *r;
  return out;
}

}  // namespace ok::sweep
