// The sweep's driver and the executor interface it drives (ninja's CommandRunner is the model).
//
// The driver (driver.cpp) owns everything a sweep does the same way wherever its tasks run: the
// lock on the work folder, the backend/model check, which tasks are left, each task's session
// (resumed when the store knows it, else new) and its set-aside report, error.json for a run that
// ended without a finished report, the results TSV rewritten after every task, the counts and ETA
// of Progress, and Ctrl-C. An executor only runs tasks' command lines: the local pool of slots
// (local_executor.cpp) and a SLURM job array (slurm_executor.cpp); tests drive the driver with a
// fake one. docs/sweep.md, "Executors", says how to add one.
//
// Single-threaded: the driver calls its executor from its own thread only. The driver owns the
// tasks; an executor keeps pointers to the tasks it was given until it has reported their end.
#pragma once

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sweep/sweep.hpp"
#include "util/error.hpp"

namespace ok::sweep {

// What begin() may use.
struct Plan {
  std::vector<Task>& tasks;  // every selected task, done or not
  size_t pending = 0;        // how many of them are left to run
  int lock_fd = -1;          // the work folder's lock; children that must hold it inherit it
};

struct Started {
  std::string slot;     // where the task runs, for the progress line ("" where there are none)
  bool running = true;  // false: queued for a batch that wait() submits (no "started" event)
};

struct Finished {
  Task* task = nullptr;
  std::string slot;
  bool interrupted = false;      // stopped as on Ctrl-C: its session stays resumable
  std::string why;               // how it ended; read only when its report is not finished
  std::optional<double> wall_s;  // nullopt where the executor cannot time the task
};

// What an executor reports besides tasks' ends: "planned" (text: how it runs them, e.g. "2
// slots", once it knows) and "warning".
using Notify = std::function<void(std::string_view kind, const Task* task, std::string text)>;

class Executor {
 public:
  virtual ~Executor() = default;
  // Once, under the lock, before any task starts: checks and gathering of its own. An error ends
  // the sweep.
  virtual util::Result<void> begin(const Plan& plan, const Notify& notify) = 0;
  // The store a task's optimize writes, where the driver looks up its session.
  virtual std::filesystem::path store_of(const Task& t) const = 0;
  // Whether start() takes another task now.
  virtual bool can_start() const = 0;
  // Runs `argv` for task t (its folder and session file are ready). An error fails that task
  // alone (the driver records it); the sweep goes on.
  virtual util::Result<Started> start(Task& t, const std::vector<std::string>& argv) = 0;
  // Waits a short while (about a poll interval at most) for a task to end: nullopt when none did,
  // so that the driver can look at Ctrl-C. Every started task ends exactly once. Called only
  // while tasks are in flight or busy(); an error ends the sweep.
  virtual util::Result<std::optional<Finished>> wait(const Notify& notify) = 0;
  // Ctrl-C: stops every task in flight so that its session stays resumable (their ends still come
  // through wait()) and starts none. Returns the line of the "stopped" event.
  virtual std::string cancel_all() = 0;
  // Tasks that run at once, for the ETA.
  virtual int slots() const = 0;
  // Whether it still has work of its own once every task it started has ended; the driver goes
  // on calling wait() until it has not. SLURM: the array is still listed, or its stores are not
  // merged yet.
  virtual bool busy() const { return false; }
};

// Runs the tasks that are not done through `executor`, starting them in order as it takes them,
// until each has run once or `cancel` is set. Progress events go to `observer` (may be empty).
util::Result<Outcome> drive(const Options& o, std::vector<Task> tasks, Executor& executor,
                            const std::atomic<bool>* cancel, const Observer& observer);

// The executors of `--executor local|slurm`. `o` must outlive them.
std::unique_ptr<Executor> local_executor(const Options& o);
std::unique_ptr<Executor> slurm_executor(const Options& o);

}  // namespace ok::sweep
