#include "remote/ssh_worker.hpp"

#include <fmt/core.h>

#include <map>

#include "remote/package.hpp"
#include "util/digest.hpp"
#include "util/paths.hpp"

namespace ok::remote {

namespace fs = std::filesystem;
using nlohmann::json;
using util::ErrorKind;
using util::fail;

namespace {

constexpr size_t kMaxStagedBytes = 12u << 20;  // as the worker's stage.py
constexpr std::chrono::seconds kStageTimeout{300};

std::string remote_launch(const SshWorkerOptions& o, const std::string& hash) {
  std::string exports =
      "OPENKERNEL_REMOTE_CACHE=\"$c\" PYTHONPATH=\"$d/python${PYTHONPATH:+:$PYTHONPATH}\" "
      "PYTHONDONTWRITEBYTECODE=1";
  for (const auto& [k, v] : o.env_set) exports += " " + k + "=" + shell_quote(v);
  const std::string script = fmt::format(
      "c=\"{}\"; d=\"$c/worker-{}\"; "
      "[ -f \"$d/READY\" ] || {{ echo \"openkernel: the worker package is missing from $d\" >&2; "
      "exit 97; }}; export {}; exec {} -u -m openkernel_worker",
      kRemoteCacheExpr, hash, exports, shell_quote(o.python));
  return "sh -c " + shell_quote(script);
}

util::Result<eval::Worker> connect_worker(const SshWorkerOptions& o, const WorkerPackage& package) {
  if (auto r = ensure_shipped(o.host, package, o.start_timeout); !r)
    return std::unexpected(r.error());
  eval::Launch launch;
  launch.argv = ssh_argv(o.host, remote_launch(o, package.hash));
  launch.label = fmt::format("{} -m openkernel_worker on {}", o.python, o.host.url());
  auto w = eval::Worker::connect(launch, o.start_timeout, o.cancel);
  if (!w) return fail(w.error().kind, fmt::format("{}: {}", o.host.url(), w.error().message));
  return w;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

class SshTransport final : public eval::Transport {
 public:
  SshTransport(SshWorkerOptions o, WorkerPackage p) : opts_(std::move(o)), package_(std::move(p)) {}

  std::string describe() const override { return opts_.host.url(); }

  util::Result<json> outgoing(eval::Worker& direct, json request) override {
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
      const std::string name = fs::path(local).filename().string();
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

  void incoming(json& reply) override {
    if (reply.is_string()) {
      auto s = reply.get<std::string>();
      for (const auto& [k, remote] : staged_) replace_all(s, remote, local_of_[k]);
      reply = s;
    } else if (reply.is_structured()) {
      for (auto& v : reply) incoming(v);
    }
  }

  util::Result<eval::Worker> reconnect() override {
    staged_.clear();  // the host may have lost them (a full disk, a wiped cache)
    forget_shipped(opts_.host, package_);
    return connect_worker(opts_, package_);
  }

 private:
  SshWorkerOptions opts_;
  WorkerPackage package_;
  std::string remote_cache_;
  std::map<std::string, std::string> staged_;    // sha256/name -> path on the host
  std::map<std::string, std::string> local_of_;  // sha256/name -> the engine's path
};

}  // namespace

std::string remote_launch_command(const SshWorkerOptions& opts, const std::string& hash) {
  return remote_launch(opts, hash);
}

util::Result<eval::Worker> start_ssh_worker(const SshWorkerOptions& opts) {
  auto package = worker_package(opts.resource_root);
  if (!package) return std::unexpected(package.error());
  auto w = connect_worker(opts, *package);
  if (!w) return w;
  w->attach(std::make_unique<SshTransport>(opts, std::move(*package)));
  return w;
}

}  // namespace ok::remote
