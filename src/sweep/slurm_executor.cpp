// The SLURM executor: the tasks left run as one job array (a `case` over SLURM_ARRAY_TASK_ID),
// each optimize with its own store in its task folder (SQLite's WAL cannot be shared across
// machines), merged into the sweep's store once the array is over.
#include <fmt/chrono.h>
#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "store/store.hpp"
#include "sweep/executor.hpp"
#include "sweep/task_files.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

namespace ok::sweep {

namespace {

namespace fs = std::filesystem;
using namespace files;
using util::ErrorKind;
using util::fail;
using Clock = std::chrono::steady_clock;

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

class SlurmExecutor final : public Executor {
 public:
  explicit SlurmExecutor(const Options& o)
      : o_(o), slurm_dir_(fs::absolute(work_dir(o.output)) / "slurm") {}

  // Problems finished by an earlier array (even one whose sweep died) are merged now: the merge
  // is idempotent, and a sweep that was not there to gather them must not lose them. An array
  // from an earlier run that SLURM still runs would race a new one on the same sessions.
  util::Result<void> begin(const Plan& plan, const Notify& notify) override {
    auto st = store::Store::open(o_.db);
    if (!st) return std::unexpected(st.error());
    store_.emplace(std::move(*st));
    for (auto& t : plan.tasks)
      if (task_state(t) == TaskState::kDone) merge(t, notify);
    if (plan.pending == 0) return {};
    std::string old = read_text(slurm_dir_ / "job");
    if (old.empty()) return {};
    if (auto live = slurm_job_live(old); !live || *live)
      return fail(
          ErrorKind::kUsage,
          fmt::format("the SLURM array {} of an earlier run into {} is still queued or "
                      "running{}: wait for it or `scancel {}`, then re-run",
                      old, o_.output.string(), live ? "" : " (squeue did not answer)", old));
    return {};
  }

  fs::path store_of(const Task& t) const override { return t.dir / kTaskStore; }

  bool can_start() const override { return job_.empty(); }

  // Queues the task as the array's next index; the first wait() submits the array.
  util::Result<Started> start(Task& t, const std::vector<std::string>& argv) override {
    std::vector<std::string> quoted;
    for (const auto& a : argv) quoted.push_back(shell_quote(a));
    cases_ +=
        fmt::format("  {}) exec {} > {} 2> {} ;;\n", queued_.size(), util::join(quoted, " "),
                    shell_quote((t.dir / kStdout).string()), shell_quote((t.dir / kLog).string()));
    queued_.push_back(&t);
    seen_.push_back(false);
    return Started{"", false};
  }

  // Submits the array on the first call; then announces reports as they appear while squeue lists
  // the array, and once it does not, merges every task's store and ends the rest (one per call).
  util::Result<std::optional<Finished>> wait(const Notify& notify) override {
    if (job_.empty())
      if (auto s = submit(notify); !s) return std::unexpected(s.error());
    if (!over_) {
      for (size_t i = 0; i < queued_.size(); ++i) {
        if (seen_[i] || task_state(*queued_[i]) != TaskState::kDone) continue;
        seen_[i] = true;
        return Finished{queued_[i], "", false, "", std::nullopt};
      }
      if (auto p = poll(); !p) return std::unexpected(p.error());
      if (!over_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        return std::nullopt;
      }
    }
    while (gathered_ < queued_.size()) {
      const size_t i = gathered_++;
      merge(*queued_[i], notify);
      if (!seen_[i]) return gather(*queued_[i]);
    }
    return std::nullopt;
  }

  // Running tasks get SIGINT (optimize keeps its session resumable); tasks not started yet are
  // cancelled outright (SLURM signals only running jobs).
  std::string cancel_all() override {
    cancelled_ = true;
    if (job_.empty()) return "interrupted before the SLURM array was submitted";
    (void)util::run_capture({"scancel", "--signal=INT", "--full", job_}, std::chrono::seconds(30));
    (void)util::run_capture({"scancel", "--state=PENDING", job_}, std::chrono::seconds(30));
    return "interrupted: SLURM array " + job_ + " signalled";
  }

  int slots() const override { return std::max<int>(1, static_cast<int>(queued_.size())); }

  // Reports can appear before SLURM lets go of the array: its stores are merged only once it has.
  bool busy() const override { return !job_.empty() && gathered_ < queued_.size(); }

 private:
  util::Result<void> submit(const Notify& notify);
  util::Result<void> poll();
  Finished gather(Task& t) const;

  // Gathers a task's own store into the sweep's (idempotent: a session copied again replaces its
  // earlier copy).
  void merge(const Task& t, const Notify& notify) {
    const fs::path db = t.dir / kTaskStore;
    if (!fs::exists(db)) return;
    if (auto m = store_->merge_sessions(db); !m)
      notify("warning", &t, "could not merge " + db.string() + ": " + m.error().message);
  }

  const Options& o_;
  const fs::path slurm_dir_;
  std::optional<store::Store> store_;  // the sweep's
  std::string cases_;                  // the array script's case lines
  std::vector<Task*> queued_;          // by array index
  std::vector<bool> seen_;             // announced done while the array ran
  std::string job_;                    // the array's id once submitted
  bool over_ = false, cancelled_ = false;
  Clock::time_point last_poll_ = Clock::now() - std::chrono::seconds(10);
  int squeue_failures_ = 0;
  size_t gathered_ = 0;
};

util::Result<void> SlurmExecutor::submit(const Notify& notify) {
  std::string script = "#!/bin/bash\n# Written by `openkernel sweep --executor slurm`.\nset -u\n";
  script += "case \"${SLURM_ARRAY_TASK_ID:-}\" in\n" + cases_;
  script +=
      "  *) echo \"openkernel sweep: no task ${SLURM_ARRAY_TASK_ID:-}\" >&2; exit 2 ;;\nesac\n";
  std::error_code ec;
  fs::create_directories(slurm_dir_, ec);
  auto stamp = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  fs::path script_path =
      slurm_dir_ / fmt::format("array-{:%Y%m%d-%H%M%S}-{}.sh", stamp, ::getpid());
  if (auto w = util::write_file(script_path, script); !w) return w;
  fs::permissions(script_path, fs::perms::owner_all, fs::perm_options::add, ec);

  std::vector<std::string> argv = {"sbatch",
                                   "--parsable",
                                   "--job-name",
                                   "openkernel-sweep",
                                   fmt::format("--array=0-{}", queued_.size() - 1),
                                   "--output",
                                   (slurm_dir_ / "%A_%a.out").string()};
  bool has_gpu_request = false;
  for (const auto& a : o_.slurm_args)
    if (a.rfind("--gres", 0) == 0 || a.rfind("--gpus", 0) == 0 || a.rfind("-G", 0) == 0)
      has_gpu_request = true;
  if (o_.backend != "cpu" && !has_gpu_request) argv.push_back("--gres=gpu:1");
  argv.insert(argv.end(), o_.slurm_args.begin(), o_.slurm_args.end());
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
  if (auto w = util::write_file(slurm_dir_ / "job", job + "\n"); !w) return w;
  job_ = job;
  notify("planned", nullptr, fmt::format("SLURM job array {} with {} tasks", job_, queued_.size()));
  return {};
}

// The array is over when squeue lists none of its tasks (it lists only live ones; a purged job
// id is an error, also over). Asked at most once a second; other errors are retried for two
// minutes.
util::Result<void> SlurmExecutor::poll() {
  if (Clock::now() - last_poll_ < std::chrono::seconds(1)) return {};
  last_poll_ = Clock::now();
  auto live = slurm_job_live(job_);
  if (live && !*live) {
    over_ = true;
    return {};
  }
  squeue_failures_ = live ? 0 : squeue_failures_ + 1;
  if (squeue_failures_ >= 120)
    return fail(ErrorKind::kEnvironment,
                fmt::format("squeue has not answered about array {} for two minutes; the "
                            "tasks may still run: re-run this command once SLURM answers",
                            job_));
  return {};
}

// The end of a task the array did not finish while it was watched: done after all, stopped by
// Ctrl-C (or cancelled before it started), or failed.
Finished SlurmExecutor::gather(Task& t) const {
  if (task_state(t) == TaskState::kDone) return Finished{&t, "", false, "", std::nullopt};
  nlohmann::json r = read_json(t.dir / kReport);
  if (r.is_object() && r.value("status", "") == "interrupted")
    return Finished{&t, "", true, "interrupted: its session stays resumable", std::nullopt};
  if (cancelled_ && !r.is_object())
    return Finished{&t, "", true, "cancelled before it started", std::nullopt};
  std::string why = "the array task ended without a finished report";
  if (std::string error = report_error(t); !error.empty()) why += ": " + error;
  why += fmt::format(" (see {} and {})", (t.dir / kLog).string(),
                     (slurm_dir_ / (job_ + "_*.out")).string());
  return Finished{&t, "", false, why, std::nullopt};
}

}  // namespace

std::unique_ptr<Executor> slurm_executor(const Options& o) {
  return std::make_unique<SlurmExecutor>(o);
}

}  // namespace ok::sweep
