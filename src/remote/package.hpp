// The worker package as shipped to an evaluation host (design: remote/host.hpp).
//
// `worker_package` lists the files a remote worker needs (python/openkernel_worker/**, without
// __pycache__ and compiled files, and data/skills/elementwise_ops.json, the op table the worker's
// `analyze` reads) and hashes them (SHA-256 over each relative path and content, in path order):
// the host keeps the package in <cache>/worker-<first 16 hex digits>/. `ensure_shipped` checks the
// host for that folder's READY mark and, only when it lacks it, sends the files as one tar over
// ssh into a temporary folder renamed into place (a concurrent engine's copy wins, whole). Hosts
// already checked by this process are remembered (thread-safe) until `forget_shipped`.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "remote/host.hpp"
#include "util/error.hpp"

namespace ok::remote {

struct WorkerPackage {
  std::filesystem::path root;      // the resource root the files are relative to
  std::vector<std::string> files;  // relative paths, sorted
  std::string hash;                // 16 hex digits
};

util::Result<WorkerPackage> worker_package(const std::filesystem::path& resource_root);

// The package's files as one tar (made by the system's `tar`); kEnvironment when that fails.
util::Result<std::string> package_tar(const WorkerPackage& package);

// The host's cache folder, as a POSIX shell expression (the engine's cache_dir there).
inline constexpr const char* kRemoteCacheExpr = "${XDG_CACHE_HOME:-$HOME/.cache}/openkernel";

// POSIX shell single quoting.
std::string shell_quote(std::string_view s);
// The ssh command line that runs `remote_command` (one shell text) on `host`: the program from
// $OPENKERNEL_SSH (default `ssh`), BatchMode, keep-alives that notice a vanished host within a
// minute, the user's ~/.ssh/config for everything else.
std::vector<std::string> ssh_argv(const EvalHost& host, const std::string& remote_command);

// kEnvironment when the host cannot be reached or the copy fails, with ssh's own words.
util::Result<void> ensure_shipped(const EvalHost& host, const WorkerPackage& package,
                                  std::chrono::seconds timeout);
void forget_shipped(const EvalHost& host, const WorkerPackage& package);

}  // namespace ok::remote
