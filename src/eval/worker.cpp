#include "eval/worker.hpp"

#include <fmt/core.h>
#include <signal.h>

#include <cmath>

#include "util/paths.hpp"
#include "util/secrets.hpp"
#include "util/strings.hpp"

namespace ok::eval {

using nlohmann::json;
using util::ErrorKind;
using util::fail;

std::vector<std::string> python_candidates(const std::optional<std::string>& configured) {
  if (configured) return {*configured};
  std::vector<std::string> out;
  auto add = [&](const std::filesystem::path& p) {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec)) return;
    auto canonical = std::filesystem::canonical(p, ec).string();
    for (const auto& o : out)
      if (std::filesystem::canonical(o, ec).string() == canonical) return;
    out.push_back(p.string());
  };
  if (auto path = util::getenv_str("PATH"))
    for (const auto& dir : util::split(*path, ':'))
      if (!dir.empty()) add(std::filesystem::path(dir) / "python3");
  add("/usr/bin/python3");
  add("/usr/local/bin/python3");
  return out;
}

static util::Result<Worker> start_one(const std::string& python, const WorkerOptions& opts);

util::Result<Worker> Worker::start(const WorkerOptions& opts) {
  std::string tried;
  for (const auto& python : opts.pythons) {
    auto w = start_one(python, opts);
    if (w || w.error().kind != ErrorKind::kEnvironment) return w;
    tried += "\n  " + python + ": " + w.error().message;
  }
  if (opts.pythons.size() == 1)
    return fail(ErrorKind::kEnvironment,
                fmt::format("the configured Python cannot serve as the evaluation worker:{}\n"
                            "install torch for it or point --python / OPENKERNEL_PYTHON at one "
                            "that imports torch",
                            tried));
  return fail(ErrorKind::kEnvironment,
              fmt::format("no Python that imports torch was found; tried:{}\ninstall PyTorch (on "
                          "Debian: apt-get install python3-torch) or set OPENKERNEL_PYTHON",
                          tried.empty() ? " none on PATH" : tried));
}

static util::Result<Worker> start_one(const std::string& python, const WorkerOptions& opts) {
  Launch launch;
  launch.argv = {python, "-u", "-m", "openkernel_worker"};
  launch.label = python + " -m openkernel_worker";
  std::string pypath = (opts.resource_root / "python").string();
  if (auto existing = util::getenv_str("PYTHONPATH")) pypath += ":" + *existing;
  launch.env_set["PYTHONPATH"] = pypath;
  launch.env_set["PYTHONDONTWRITEBYTECODE"] = "1";
  launch.env_set[kWatchdogEnv] = "1";
  for (const auto& [k, v] : opts.env_set) launch.env_set[k] = v;
  // An announcement (the one-off evaluate's, docs/worker-protocol.md) only where the launcher
  // makes one: one inherited from the user's shell would start a boot process in a session
  // worker or the build worker.
  if (!opts.env_set.count("OPENKERNEL_WORKER_EXPECT"))
    launch.env_unset.push_back("OPENKERNEL_WORKER_EXPECT");
  return Worker::connect(launch, opts.start_timeout, opts.cancel);
}

util::Result<Worker> Worker::connect(const Launch& launch, std::chrono::seconds start_timeout,
                                     const std::atomic<bool>* cancel) {
  util::SpawnOptions so;
  so.argv = launch.argv;
  so.env_set = launch.env_set;
  // The worker needs no credential, and a candidate may see the worker's environment when a GPU
  // sandbox shares the PID namespace: API keys and tokens stay in the engine.
  so.env_unset = util::secret_env_names();
  so.env_unset.insert(so.env_unset.end(), launch.env_unset.begin(), launch.env_unset.end());
  auto proc = util::Subprocess::spawn(so);
  if (!proc) return std::unexpected(proc.error());
  // Lines are read in short slices so that a cancellation is noticed within a quarter of a
  // second (returning stops the worker: the Subprocess kills its process group).
  const auto deadline = std::chrono::steady_clock::now() + start_timeout;
  const NextLine next_line = [&]() -> util::Result<std::string> {
    while (true) {
      const auto until = cancel ? std::min(deadline, std::chrono::steady_clock::now() +
                                                         std::chrono::milliseconds(250))
                                : deadline;
      auto line = proc->read_line(until);
      if (cancel && cancel->load())
        return fail(ErrorKind::kCancelled, "interrupted while the evaluation worker started");
      if (line || line.error().kind != ErrorKind::kTimeout || until >= deadline) return line;
    }
  };
  if (launch.before_hello)
    if (auto r = launch.before_hello(*proc, next_line); !r) {
      if (r.error().kind == ErrorKind::kCancelled) return std::unexpected(r.error());
      std::string err = proc->take_stderr(4000);
      return fail(ErrorKind::kEnvironment,
                  fmt::format("the evaluation worker ({}) did not start: {}{}", launch.label,
                              r.error().message, err.empty() ? "" : "; it printed: " + err));
    }
  auto line = next_line();
  if (!line && line.error().kind == ErrorKind::kCancelled) return std::unexpected(line.error());
  if (!line) {
    std::string err = proc->take_stderr(4000);
    return fail(ErrorKind::kEnvironment,
                fmt::format("the evaluation worker ({}) did not start: {}{}", launch.label,
                            line.error().message, err.empty() ? "" : "; it printed: " + err));
  }
  json hello = json::parse(*line, nullptr, false);
  if (hello.is_discarded() || hello.value("type", "") != "hello")
    return fail(ErrorKind::kInternal, "the evaluation worker sent a malformed greeting: " + *line);
  if (!hello.value("ok", false))
    return fail(ErrorKind::kEnvironment, hello["error"].value("message", "worker failed"));
  if (hello.value("protocol", 0) != kProtocolVersion)
    return fail(ErrorKind::kInternal,
                fmt::format("the worker speaks protocol {}, this openkernel speaks {}",
                            hello.value("protocol", 0), kProtocolVersion));
  return Worker::adopt(std::move(*proc), std::move(hello));
}

Worker& Worker::operator=(Worker&& other) noexcept {
  if (this != &other) {
    close_channel();
    proc_ = std::move(other.proc_);
    hello_ = std::move(other.hello_);
    transport_ = std::move(other.transport_);
    next_id_ = other.next_id_;
    alive_ = other.alive_;
    lost_ = other.lost_;
  }
  return *this;
}

Worker::~Worker() {
  close_channel();
}

void Worker::close_channel() noexcept {
  if (transport_) transport_->close(proc_);
}

void Worker::stop() noexcept {
  close_channel();
  transport_.reset();  // closed once: its successor is reached afresh, never through this one
  alive_ = false;
  if (proc_.pid() > 0 && !proc_.try_wait()) {
    proc_.kill_group(SIGKILL);
    (void)proc_.wait();
  }
}

util::Result<json> Worker::call(json request, std::chrono::seconds timeout,
                                const std::atomic<bool>* cancel) {
  if (!transport_) return call_direct(std::move(request), timeout, cancel);
  auto r = call_remote(request, timeout, cancel);
  if (r || !lost_) return r;
  // The channel closed with the request in flight: once more on a fresh worker, then the loss
  // is reported as such (never as a verdict on what was being evaluated).
  std::string first = r.error().message;
  auto fresh = transport_->reconnect();
  if (!fresh)
    return fail(ErrorKind::kRemoteLost,
                fmt::format("lost the evaluation worker on {} ({}), and a fresh one could not be "
                            "started: {}",
                            transport_->describe(), first, fresh.error().message));
  fresh->transport_ = std::move(transport_);
  *this = std::move(*fresh);
  r = call_remote(std::move(request), timeout, cancel);
  if (r || !lost_) return r;
  return fail(ErrorKind::kRemoteLost,
              fmt::format("lost the evaluation worker on {} twice (the request was retried once "
                          "on a fresh worker): {}; then: {}",
                          transport_->describe(), first, r.error().message));
}

util::Result<json> Worker::call_remote(json request, std::chrono::seconds timeout,
                                       const std::atomic<bool>* cancel) {
  auto start = std::chrono::steady_clock::now();
  auto ready = transport_->outgoing(*this, std::move(request));
  if (!ready) return ready;
  auto sent = std::chrono::steady_clock::now();
  auto r = call_direct(std::move(*ready), timeout, cancel);
  if (!r) return r;
  transport_->incoming(*r);
  auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
  if (r->is_object() && r->contains("worker_wall_s") && (*r)["worker_wall_s"].is_number()) {
    double round_trip = seconds(std::chrono::steady_clock::now() - sent);
    double transfer =
        seconds(sent - start) + std::max(0.0, round_trip - (*r)["worker_wall_s"].get<double>());
    if (!(*r)["phases_s"].is_object()) (*r)["phases_s"] = json::object();
    (*r)["phases_s"]["transfer"] = std::round(transfer * 1e4) / 1e4;
  }
  return r;
}

util::Result<json> Worker::call_direct(json request, std::chrono::seconds timeout,
                                       const std::atomic<bool>* cancel) {
  if (!alive_) return fail(ErrorKind::kInternal, "the evaluation worker is not running");
  int id = next_id_++;
  request["id"] = id;
  if (auto w = proc_.write_all(request.dump() + "\n"); !w) {
    alive_ = false;
    lost_ = true;
    return fail(ErrorKind::kInternal, "the evaluation worker died: " + proc_.take_stderr(4000));
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    // Wait in short slices so that a cancellation is noticed within a quarter of a second.
    auto slice =
        std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(250));
    auto line = proc_.read_line(cancel ? slice : deadline);
    if (!line && line.error().kind == ErrorKind::kTimeout && slice < deadline && cancel &&
        !cancel->load())
      continue;
    if (!line && cancel && cancel->load()) {
      alive_ = false;
      proc_.kill_group(SIGKILL);
      (void)proc_.wait();
      return fail(ErrorKind::kCancelled, "interrupted; the evaluation in flight was abandoned");
    }
    if (!line) {
      alive_ = false;
      lost_ = line.error().kind != ErrorKind::kTimeout;
      std::string err = proc_.take_stderr(4000);
      proc_.kill_group(SIGKILL);
      auto status = proc_.wait();
      if (line.error().kind == ErrorKind::kTimeout)
        return fail(ErrorKind::kInternal,
                    fmt::format("the evaluation worker gave no answer within {} s and was stopped",
                                timeout.count()));
      return fail(ErrorKind::kInternal, fmt::format("the evaluation worker {}{}", status.describe(),
                                                    err.empty() ? "" : ": " + err));
    }
    json reply = json::parse(*line, nullptr, false);
    if (reply.is_discarded() || !reply.is_object())
      return fail(ErrorKind::kInternal,
                  "the evaluation worker sent a malformed reply: " + line->substr(0, 500));
    if (reply.value("id", -1) != id) continue;  // a stale reply from an abandoned request
    if (reply.value("ok", false)) return reply["result"];
    const json& e = reply["error"];
    std::string kind = e.value("kind", "internal");
    std::string msg = e.value("message", "unknown worker error");
    if (kind == "bad_input") return fail(ErrorKind::kBadInput, msg);
    if (kind == "environment") return fail(ErrorKind::kEnvironment, msg);
    return fail(ErrorKind::kInternal, "the evaluation worker failed: " + msg);
  }
}

}  // namespace ok::eval
