// The engine's side of the evaluation worker: a Python process speaking the JSON-lines protocol of
// docs/worker-protocol.md. The worker is trusted (it builds the reference and compares outputs);
// candidates run in its children, never in it.
//
// Worker owns its subprocess; destroying it shuts the worker down. Not thread-safe: one request
// at a time per Worker (one worker per device).
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
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

class Worker {
 public:
  static util::Result<Worker> start(const WorkerOptions& opts);

  // Sends one request (an "id" is added) and waits for its reply. A worker-reported error becomes
  // an Error of the matching kind; a dead or hung worker is kInternal and the worker is stopped.
  // When `cancel` becomes true while waiting, the worker is stopped (its evaluation in flight is
  // lost) and the call returns kCancelled.
  util::Result<nlohmann::json> call(nlohmann::json request, std::chrono::seconds timeout,
                                    const std::atomic<bool>* cancel = nullptr);

  const nlohmann::json& hello() const { return hello_; }
  static Worker adopt(util::Subprocess p, nlohmann::json hello) {
    return Worker(std::move(p), std::move(hello));
  }
  bool alive() const { return alive_; }

 private:
  Worker(util::Subprocess p, nlohmann::json hello)
      : proc_(std::move(p)), hello_(std::move(hello)) {}
  util::Subprocess proc_;
  nlohmann::json hello_;
  int next_id_ = 1;
  bool alive_ = true;
};

}  // namespace ok::eval
