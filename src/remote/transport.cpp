#include "remote/transport.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "util/digest.hpp"
#include "util/paths.hpp"

namespace ok::remote {

using nlohmann::json;
using util::ErrorKind;
using util::fail;

namespace {

constexpr size_t kMaxStagedBytes = 12u << 20;  // as the worker's stage.py
constexpr std::chrono::seconds kStageTimeout{300};

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

std::string StagedTransport::staged_name(const std::string& local_path) {
  std::string name = std::filesystem::path(local_path).filename().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("_.+-").find(c) == std::string_view::npos)
      c = '_';
  if (name.empty() || name == "." || name == "..") return "file";
  if (name.front() == '-' || name.front() == '+') name.insert(0, "_");
  return name.substr(0, 200);
}

util::Result<json> StagedTransport::outgoing(eval::Worker& direct, json request) {
  static const char* kPathFields[] = {"reference", "candidate"};
  json files = json::array();
  std::vector<std::pair<const char*, std::string>> pending;  // field, staging key
  for (const char* field : kPathFields) {
    if (!request.contains(field) || !request[field].is_string()) continue;
    const std::string local = request[field];
    auto bytes = util::read_file(local);
    if (!bytes) return std::unexpected(bytes.error());
    if (bytes->size() > kMaxStagedBytes)
      return fail(ErrorKind::kBadInput,
                  fmt::format("the {} {} is larger than {} MiB: too large to send to {}", field,
                              local, kMaxStagedBytes >> 20, describe()));
    const std::string sha = util::sha256_hex(*bytes);
    const std::string name = staged_name(local);
    const std::string k = sha + "/" + name;
    if (!staged_.contains(k))
      files.push_back({{"name", name}, {"sha256", sha}, {"data", util::base64_encode(*bytes)}});
    pending.emplace_back(field, k);
    local_of_[k] = local;
  }
  const bool needs_cache = request.contains("cache_dir") && remote_cache_.empty();
  if (!files.empty() || needs_cache) {
    std::vector<std::string> keys;
    for (const auto& f : files)
      keys.push_back(f["sha256"].get<std::string>() + "/" + f["name"].get<std::string>());
    auto r = direct.call_direct({{"op", "stage"}, {"files", files}}, kStageTimeout);
    if (!r) return r;
    remote_cache_ = r->value("cache_dir", "");
    const json& paths = (*r)["paths"];
    if (!paths.is_array() || paths.size() != keys.size())
      return fail(ErrorKind::kInternal, "the remote worker's stage reply lacks its paths");
    for (size_t i = 0; i < keys.size(); ++i) staged_[keys[i]] = paths[i].get<std::string>();
  }
  for (const auto& [field, k] : pending) request[field] = staged_[k];
  if (request.contains("cache_dir")) request["cache_dir"] = remote_cache_;
  return request;
}

void StagedTransport::incoming(json& reply) {
  if (reply.is_string()) {
    auto s = reply.get<std::string>();
    for (const auto& [k, remote] : staged_) replace_all(s, remote, local_of_[k]);
    reply = s;
  } else if (reply.is_structured()) {
    for (auto& v : reply) incoming(v);
  }
}

util::Result<eval::Worker> StagedTransport::reconnect() {
  staged_.clear();  // the host may have lost them (a full disk, a wiped cache)
  remote_cache_.clear();
  return fresh();
}

}  // namespace ok::remote
