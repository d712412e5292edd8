#include "remote/ssh_worker.hpp"

#include <fmt/core.h>

#include "remote/package.hpp"
#include "remote/slurm_worker.hpp"
#include "remote/transport.hpp"
#include "util/secrets.hpp"
#include "util/subprocess.hpp"

namespace ok::remote {

using util::ErrorKind;
using util::fail;

namespace {

constexpr std::chrono::seconds kStopTimeout{kStopGraceSeconds + 20};

std::string remote_launch(const RemoteWorkerOptions& o, const std::string& hash) {
  std::string exports = fmt::format(
      "OPENKERNEL_REMOTE_CACHE=\"$c\" PYTHONPATH=\"$d/python${{PYTHONPATH:+:$PYTHONPATH}}\" "
      "PYTHONDONTWRITEBYTECODE=1 {}=1",
      eval::kWatchdogEnv);
  for (const auto& [k, v] : o.env_set) exports += " " + k + "=" + shell_quote(v);
  const std::string script = fmt::format(
      "c=\"{}\"; d=\"$c/worker-{}\"; "
      "[ -f \"$d/READY\" ] || {{ echo \"openkernel: the worker package is missing from $d\" >&2; "
      "exit 97; }}; export {}; exec {} -u -m openkernel_worker",
      kRemoteCacheExpr, hash, exports, shell_quote(o.python));
  return "sh -c " + shell_quote(script);
}

util::Result<eval::Worker> connect_worker(const RemoteWorkerOptions& o,
                                          const WorkerPackage& package) {
  if (auto r = ensure_shipped(o.host, package, o.start_timeout); !r)
    return std::unexpected(r.error());
  eval::Launch launch;
  launch.argv = ssh_argv(o.host, remote_launch(o, package.hash));
  launch.label = fmt::format("{} -m openkernel_worker on {}", o.python, o.host.url());
  auto w = eval::Worker::connect(launch, o.start_timeout, o.cancel);
  if (!w) return fail(w.error().kind, fmt::format("{}: {}", o.host.url(), w.error().message));
  return w;
}

class SshTransport final : public StagedTransport {
 public:
  SshTransport(RemoteWorkerOptions o, WorkerPackage p, long pid)
      : opts_(std::move(o)), package_(std::move(p)), pid_(pid) {}

  std::string describe() const override { return opts_.host.url(); }

 protected:
  util::Result<eval::Worker> fresh() override {
    // The lost worker may still run on the host (sshd has not noticed a half-open connection):
    // stop it, with its candidates, before its successor takes the device.
    if (pid_ > 0) {
      util::SpawnOptions so;
      so.argv = ssh_argv(opts_.host, remote_stop_command(pid_));
      so.env_unset = util::secret_env_names();
      (void)util::run_capture(so, kStopTimeout);  // an unreachable host: nothing to stop there
    }
    forget_shipped(opts_.host, package_);
    auto w = connect_worker(opts_, package_);
    pid_ = w ? w->hello().value("pid", 0L) : 0;
    return w;
  }

 private:
  RemoteWorkerOptions opts_;
  WorkerPackage package_;
  long pid_;  // the current worker's on the host, from its greeting
};

}  // namespace

std::string remote_launch_command(const RemoteWorkerOptions& opts, const std::string& hash) {
  return remote_launch(opts, hash);
}

std::string remote_stop_command(long pid, int grace_s) {
  // Gone: no such process, or a zombie (it holds nothing). After the grace: the worker's
  // descendants (from `ps`, as its watchdog finds them in /proc), each one's process group but the
  // worker's own unless it leads it, then each one, then it.
  const std::string script = fmt::format(
      "p={}; ps -o args= -p $p 2>/dev/null | grep -q openkernel_worker || exit 0; "
      "kill -TERM $p 2>/dev/null; i=0; while [ $i -lt {} ]; do ps -o stat= -p $p 2>/dev/null | "
      "grep -q '^[^Z]' || exit 0; "
      "sleep 1; i=$((i+1)); done; "
      "for x in $(ps -e -o pid= -o ppid= -o pgid= 2>/dev/null | awk -v r=$p '"
      "{{ up[$1] = $2; g[$1] = $3 }} END {{ d[r] = 1; do {{ n = 0; for (x in up) "
      "if (!(x in d) && (up[x] in d)) {{ d[x] = 1; n++ }} }} while (n); for (x in d) {{ "
      "if (g[x] != g[r] || (x == r && g[r] == r)) print \"-\" g[x]; if (x != r) print x }} }}' "
      "| sort -u); do kill -KILL $x 2>/dev/null; done; kill -KILL $p 2>/dev/null; exit 0",
      pid, grace_s);
  return "sh -c " + shell_quote(script);
}

util::Result<eval::Worker> start_ssh_worker(const RemoteWorkerOptions& opts) {
  auto package = worker_package(opts.resource_root);
  if (!package) return std::unexpected(package.error());
  auto w = connect_worker(opts, *package);
  if (!w) return w;
  const long pid = w->hello().value("pid", 0L);
  w->attach(std::make_unique<SshTransport>(opts, std::move(*package), pid));
  return w;
}

util::Result<eval::Worker> start_remote_worker(const RemoteWorkerOptions& opts) {
  if (opts.host.kind == EvalHost::Kind::kSlurm) return start_slurm_worker(opts);
  return start_ssh_worker(opts);
}

}  // namespace ok::remote
