// The engine's side of the evaluation worker: a Python process speaking the JSON-lines protocol of
// docs/worker-protocol.md. The worker is trusted (it builds the reference and compares outputs);
// candidates run in its children, never in it.
//
// Worker owns its subprocess; destroying it shuts the worker down. Not thread-safe: one request
// at a time per Worker (one worker per device).
//
// Where the worker runs is the Launch's business: locally `PYTHON -m openkernel_worker`, or on
// another host through a Transport (src/remote: `ssh HOST -- ... -m openkernel_worker`) that also
// carries the engine's files to it and reconnects once when the channel drops (docs/remote.md).
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/error.hpp"
#include "util/subprocess.hpp"

namespace ok::eval {

inline constexpr int kProtocolVersion = 2;

// The Pythons to try for the worker, in order: `configured` alone when given (from --python,
// OPENKERNEL_PYTHON or the config file, resolved by the caller), else every python3 on PATH, then
// /usr/bin/python3 and /usr/local/bin/python3.
std::vector<std::string> python_candidates(const std::optional<std::string>& configured);

struct WorkerOptions {
  std::vector<std::string> pythons;     // tried in order; the first that imports torch serves
  std::filesystem::path resource_root;  // holds python/openkernel_worker
  std::chrono::seconds start_timeout{120};
  // Added to the worker's environment (the build worker: CUDA_VISIBLE_DEVICES empty and
  // OPENKERNEL_WORKER_PRIORITY=idle; docs/search.md, "Pre-builds").
  std::map<std::string, std::string> env_set;
  // When it becomes true while the worker starts, the worker is stopped (with its process group)
  // and start() fails with kCancelled; null: never.
  const std::atomic<bool>* cancel = nullptr;
};

// The worker's own watchdog (docs/worker-protocol.md, "Lifetime"): set in the environment of
// every worker the engine starts, so that it stops with its candidates when the engine is gone.
inline constexpr const char* kWatchdogEnv = "OPENKERNEL_WORKER_WATCHDOG";

// Reads the starting process's next stdout line, within the start timeout, honouring cancel.
using NextLine = std::function<util::Result<std::string>()>;

// A worker's process: argv and environment changes; `label` names it in messages.
// `before_hello`, when set, runs between the start and the greeting (the srun bootstrap's
// exchange of the worker package, src/remote/slurm_worker.hpp).
struct Launch {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env_set;
  std::vector<std::string> env_unset;
  std::string label;
  std::function<util::Result<void>(util::Subprocess&, const NextLine&)> before_hello;
};

class Worker;

// A worker that runs elsewhere (src/remote). `outgoing` turns a request into what the far side
// can serve (engine paths to copies sent over the channel, through `direct`); `incoming` turns
// the reply back (those copies' paths to the engine's). `reconnect` starts a fresh worker by the
// same way; `describe` names the place ("ssh://gpu1:22") in messages. Owned by its Worker.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string describe() const = 0;
  virtual util::Result<nlohmann::json> outgoing(Worker& direct, nlohmann::json request) = 0;
  virtual void incoming(nlohmann::json& reply) = 0;
  virtual util::Result<Worker> reconnect() = 0;
  // Ends the channel of a worker that is being let go (its Worker destroyed or replaced), before
  // the process is killed: e.g. waiting for srun to release its allocation.
  virtual void close(util::Subprocess& /*channel*/) {}
};

class Worker {
 public:
  static util::Result<Worker> start(const WorkerOptions& opts);
  // Starts `launch` and checks its greeting: kEnvironment when it did not start or has no torch,
  // kInternal for a malformed greeting or another protocol version.
  static util::Result<Worker> connect(const Launch& launch, std::chrono::seconds start_timeout,
                                      const std::atomic<bool>* cancel = nullptr);
  Worker(Worker&&) noexcept = default;
  // Lets the current worker go first (its transport's close), then takes `other`'s.
  Worker& operator=(Worker&& other) noexcept;
  ~Worker();
  // Requests go through `transport` from now on (a remote worker).
  void attach(std::unique_ptr<Transport> transport) { transport_ = std::move(transport); }

  // Sends one request (an "id" is added) and waits for its reply. A worker-reported error becomes
  // an Error of the matching kind; a dead or hung worker is kInternal and the worker is stopped.
  // When `cancel` becomes true while waiting, the worker is stopped (its evaluation in flight is
  // lost) and the call returns kCancelled. Through a Transport: the request is sent once more on
  // a fresh worker when the channel closes; a second loss is kRemoteLost. A reply that states the
  // worker's own `worker_wall_s` then gains `phases_s.transfer`: the rest of the round trip plus
  // the staging of files.
  util::Result<nlohmann::json> call(nlohmann::json request, std::chrono::seconds timeout,
                                    const std::atomic<bool>* cancel = nullptr);
  // One request on this channel as it is: no transport, no retry (the transport's staging).
  util::Result<nlohmann::json> call_direct(nlohmann::json request, std::chrono::seconds timeout,
                                           const std::atomic<bool>* cancel = nullptr);
  const Transport* transport() const { return transport_.get(); }
  // Lets the worker go now, as destroying it would (its transport's close first: a SLURM
  // allocation released or cancelled), before a successor is started; it is not alive after.
  void stop() noexcept;

  const nlohmann::json& hello() const { return hello_; }
  static Worker adopt(util::Subprocess p, nlohmann::json hello) {
    return Worker(std::move(p), std::move(hello));
  }
  bool alive() const { return alive_; }

 private:
  Worker(util::Subprocess p, nlohmann::json hello)
      : proc_(std::move(p)), hello_(std::move(hello)) {}
  util::Result<nlohmann::json> call_remote(nlohmann::json request, std::chrono::seconds timeout,
                                           const std::atomic<bool>* cancel);
  void close_channel() noexcept;
  util::Subprocess proc_;
  nlohmann::json hello_;
  std::unique_ptr<Transport> transport_;
  int next_id_ = 1;
  bool alive_ = true;
  bool lost_ = false;  // the channel closed under a request (not a timeout)
};

}  // namespace ok::eval
