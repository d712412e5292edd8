#include "eval/worker.hpp"

#include <fmt/core.h>
#include <signal.h>

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
  util::SpawnOptions so;
  so.argv = {python, "-u", "-m", "openkernel_worker"};
  std::string pypath = (opts.resource_root / "python").string();
  if (auto existing = util::getenv_str("PYTHONPATH")) pypath += ":" + *existing;
  so.env_set["PYTHONPATH"] = pypath;
  so.env_set["PYTHONDONTWRITEBYTECODE"] = "1";
  for (const auto& [k, v] : opts.env_set) so.env_set[k] = v;
  // The worker needs no credential, and a candidate may see the worker's environment when a GPU
  // sandbox shares the PID namespace: API keys and tokens stay in the engine.
  so.env_unset = util::secret_env_names();
  auto proc = util::Subprocess::spawn(so);
  if (!proc) return std::unexpected(proc.error());
  // The hello, read in short slices so that a cancellation is noticed within a quarter of a second
  // (returning stops the worker: the Subprocess kills its process group).
  const auto deadline = std::chrono::steady_clock::now() + opts.start_timeout;
  util::Result<std::string> line;
  while (true) {
    const auto until =
        opts.cancel
            ? std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(250))
            : deadline;
    line = proc->read_line(until);
    if (opts.cancel && opts.cancel->load())
      return fail(ErrorKind::kCancelled, "interrupted while the evaluation worker started");
    if (line || line.error().kind != ErrorKind::kTimeout || until >= deadline) break;
  }
  if (!line) {
    std::string err = proc->take_stderr(4000);
    return fail(
        ErrorKind::kEnvironment,
        fmt::format("the evaluation worker ({} -m openkernel_worker) did not start: {}{}", python,
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

util::Result<json> Worker::call(json request, std::chrono::seconds timeout,
                                const std::atomic<bool>* cancel) {
  if (!alive_) return fail(ErrorKind::kInternal, "the evaluation worker is not running");
  int id = next_id_++;
  request["id"] = id;
  if (auto w = proc_.write_all(request.dump() + "\n"); !w) {
    alive_ = false;
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
