// Pre-builds (docs/search.md, "Pre-builds"): while a generated candidate waits for the device, a
// build worker compiles its load_inline extensions into the shared object cache, so that the
// evaluation finds them built and the device does not idle through the compile.
//
// A build worker is a second `openkernel_worker` process started with no GPU visible
// (CUDA_VISIBLE_DEVICES empty) at idle priority (OPENKERNEL_WORKER_PRIORITY=idle: nice 19 and
// SCHED_IDLE); it imports each candidate in a candidate process under the CPU sandbox profile
// (the `prebuild` request of docs/worker-protocol.md). Pre-builds report no verdict and are never
// waited for by the engine: the evaluation of a candidate whose pre-build still runs waits for it
// inside the worker (a lock per candidate source). At most `slots` run at once, one build worker
// per slot; stop() (and the destructor) cancels them: their workers are killed, and their
// sandboxed processes die with them (bwrap --die-with-parent).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "eval/worker.hpp"

namespace ok::optimize {

// Whether a candidate source may build a C++/CUDA extension (the worker's prebuild.wants_build).
bool wants_prebuild(const std::string& source);

// Pre-build slots for a machine with `cores` cores: one per five cores, 1 to 4.
int default_prebuild_slots(unsigned cores);

class PreBuilder {
 public:
  using StartWorker = std::function<util::Result<eval::Worker>()>;
  using Warn = std::function<void(const std::string&)>;

  // `request`: the prebuild request's fields shared by every candidate (reference, backend,
  // overrides, timeout_s, threads, cache_dir, no_sandbox, cuda_arch, ...); `timeout_s` bounds
  // each candidate step in the worker. `warn` is called (from a slot's thread) once when build
  // workers cannot be started; pre-builds are then off for the session.
  PreBuilder(StartWorker start, nlohmann::json request, int slots, double timeout_s, Warn warn);
  ~PreBuilder();
  PreBuilder(const PreBuilder&) = delete;
  PreBuilder& operator=(const PreBuilder&) = delete;

  // Queues attempt `number`'s candidate file (already written).
  void submit(int number, const std::string& candidate);
  // Attempt `number` goes to the device: dropped if its pre-build has not started.
  void withdraw(int number);
  // Cancels everything: queued pre-builds are dropped, running ones killed. Idempotent.
  void stop();
  // slots, submitted, started, withdrawn (went to the device before a slot took them),
  // status (count per reply status, or `error`), seconds (summed over finished pre-builds),
  // units (the build server's unit results summed: built, hit, hit_direct).
  nlohmann::json summary() const;

 private:
  void slot_main();
  void record(const nlohmann::json& reply, double seconds);

  StartWorker start_;
  nlohmann::json request_;
  double timeout_s_;
  Warn warn_;
  int slots_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::pair<int, std::string>> queue_;
  std::atomic<bool> stop_{false};
  bool disabled_ = false;
  int submitted_ = 0, started_ = 0, withdrawn_ = 0;
  double seconds_ = 0;
  std::map<std::string, int> status_, units_;
  std::vector<std::thread> threads_;
};

}  // namespace ok::optimize
