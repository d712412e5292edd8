// An evaluation worker on another host, over SSH or inside a SLURM allocation (design:
// remote/host.hpp; docs/remote.md).
//
// `start_remote_worker` starts the worker where `host` says and returns an eval::Worker whose
// requests go through a StagedTransport (remote/transport.hpp): the reference and candidate files
// staged on the far side by content, the engine's cache folder swapped for the far side's, the
// engine's paths written back into replies, one reconnect when the channel closes, after the lost
// worker has been stopped (over ssh, by the pid its greeting gave; a SLURM job, by scancel). The
// returned Worker is used like a local one (one request at a time).
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>

#include "eval/worker.hpp"
#include "remote/host.hpp"

namespace ok::remote {

struct RemoteWorkerOptions {
  EvalHost host;
  std::string python = "python3";  // on the host: --python, else python3 on its login PATH
  std::filesystem::path resource_root;
  std::map<std::string, std::string> env_set;  // set for the worker on the host
  // ssh: the package check, the copy and the greeting each; slurm: the allocation's start too.
  std::chrono::seconds start_timeout{120};
  // Stops a worker that is still starting (kCancelled), as eval::WorkerOptions::cancel does; the
  // package check and shipping over ssh before it are not interrupted.
  const std::atomic<bool>* cancel = nullptr;
};
using SshWorkerOptions = RemoteWorkerOptions;

// By host.kind: start_ssh_worker or start_slurm_worker (slurm_worker.hpp).
util::Result<eval::Worker> start_remote_worker(const RemoteWorkerOptions& opts);

util::Result<eval::Worker> start_ssh_worker(const RemoteWorkerOptions& opts);

// The worker's launch on the host for `hash` (exposed for tests): `sh -c` text run by ssh.
std::string remote_launch_command(const RemoteWorkerOptions& opts, const std::string& hash);

// The `sh -c` text that stops the worker `pid` on the host (exposed for tests): SIGTERM (its
// watchdog then kills its candidates); when it still runs `grace_s` seconds later (its cleanup
// stuck), SIGKILL to every process below it and their process groups (as the watchdog would), then
// to it and its group when it leads one. Only when that process is a worker.
inline constexpr int kStopGraceSeconds = 10;
std::string remote_stop_command(long pid, int grace_s = kStopGraceSeconds);

}  // namespace ok::remote
