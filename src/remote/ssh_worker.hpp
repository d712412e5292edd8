// An evaluation worker on another host over SSH (design: remote/host.hpp; docs/remote.md).
//
// `start_ssh_worker` ships the worker package when the host lacks it, starts the worker there
// over the system's ssh and returns an eval::Worker whose requests go through an SshTransport:
// the reference and candidate files staged on the host by content, the engine's cache folder
// swapped for the host's, the engine's paths written back into replies, one reconnect when the
// channel closes. The returned Worker is used like a local one (one request at a time).
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>

#include "eval/worker.hpp"
#include "remote/host.hpp"

namespace ok::remote {

struct SshWorkerOptions {
  EvalHost host;
  std::string python = "python3";  // on the host: --python, else python3 on its login PATH
  std::filesystem::path resource_root;
  std::map<std::string, std::string> env_set;  // set for the worker on the host
  std::chrono::seconds start_timeout{120};
  // Stops a worker that is still starting (kCancelled), as eval::WorkerOptions::cancel does; the
  // package check and shipping before it are not interrupted.
  const std::atomic<bool>* cancel = nullptr;
};

util::Result<eval::Worker> start_ssh_worker(const SshWorkerOptions& opts);

// The worker's launch on the host for `hash` (exposed for tests): `sh -c` text run by ssh.
std::string remote_launch_command(const SshWorkerOptions& opts, const std::string& hash);

}  // namespace ok::remote
