// The part of a remote worker's eval::Transport that does not depend on how the worker is reached
// (design: remote/host.hpp; docs/remote.md, "What travels").
//
// StagedTransport sends the files a request names (`reference`, `candidate`) over the channel
// first (the worker's `stage` request, by SHA-256, each once per connection) under its own file
// name with every character the worker refuses in a name replaced (staged_name), points
// the request at the staged copies and `cache_dir` at the host's cache, and writes the engine's
// paths back into the reply. Subclasses say how a fresh worker is reached (`fresh`), which
// `reconnect` calls after forgetting what was staged. Owned by its eval::Worker; not thread-safe.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "eval/worker.hpp"

namespace ok::remote {

class StagedTransport : public eval::Transport {
 public:
  util::Result<nlohmann::json> outgoing(eval::Worker& direct, nlohmann::json request) override;
  void incoming(nlohmann::json& reply) override;
  util::Result<eval::Worker> reconnect() final;

  // The name a file is staged under: its own, each byte other than a letter, a digit or _.+-
  // made '_' (a leading - or + kept from reading as an option), at most 200 bytes. A plain name
  // is kept as it is: the worker derives the problem's name from it (inspect's `name`).
  static std::string staged_name(const std::string& local_path);

 protected:
  // A fresh worker reached the same way; the one before it was lost.
  virtual util::Result<eval::Worker> fresh() = 0;

 private:
  std::string remote_cache_;
  std::map<std::string, std::string> staged_;    // sha256/name -> path on the host
  std::map<std::string, std::string> local_of_;  // sha256/name -> the engine's path
};

}  // namespace ok::remote
