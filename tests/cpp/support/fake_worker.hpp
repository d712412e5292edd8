// A fake evaluation worker for tests of the optimiser's loop: `script` is a Python program that
// speaks the worker protocol (docs/worker-protocol.md) on stdin/stdout, its hello first; this
// spawns it with /usr/bin/python3 and adopts it as an eval::Worker. Tests only.
#pragma once

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "eval/worker.hpp"
#include "util/subprocess.hpp"

namespace ok::testing {

inline util::Result<eval::Worker> fake_worker(const std::filesystem::path& script) {
  util::SpawnOptions so;
  so.argv = {"/usr/bin/python3", "-u", script.string()};
  auto proc = util::Subprocess::spawn(so);
  if (!proc) return std::unexpected(proc.error());
  auto line = proc->read_line(std::chrono::steady_clock::now() + std::chrono::seconds(30));
  if (!line) return std::unexpected(line.error());
  return eval::Worker::adopt(std::move(*proc), nlohmann::json::parse(*line));
}

}  // namespace ok::testing
