#include "remote/slurm_worker.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <thread>

#include "remote/package.hpp"
#include "remote/transport.hpp"
#include "util/paths.hpp"
#include "util/secrets.hpp"
#include "util/subprocess.hpp"

namespace ok::remote {

using nlohmann::json;
using util::ErrorKind;
using util::fail;

namespace {

constexpr std::chrono::seconds kReleaseGrace{15};
constexpr std::chrono::seconds kScancelTimeout{30};

// argv: HASH [KEY=VALUE...]. Says {"type": "ship", "have": bool}; when the package is missing,
// reads "<bytes>\n" and the tar from stdin (unbuffered, so nothing of the protocol is read ahead).
constexpr const char* kBootstrap = R"(import io, json, os, shutil, sys, tarfile, tempfile
def read(n):
    data = bytearray()
    while len(data) < n:
        b = os.read(0, min(1 << 20, n - len(data)))
        if not b:
            sys.exit("openkernel: the worker package was cut short")
        data += b
    return bytes(data)
h = sys.argv[1]
c = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "openkernel")
d = os.path.join(c, "worker-" + h)
have = os.path.isfile(os.path.join(d, "READY"))
os.write(1, (json.dumps({"type": "ship", "hash": h, "have": have}) + "\n").encode())
if not have:
    line = b""
    while not line.endswith(b"\n"):
        line += read(1)
    data = read(int(line))
    os.makedirs(c, exist_ok=True)
    t = tempfile.mkdtemp(prefix=".ship.", dir=c)
    with tarfile.open(fileobj=io.BytesIO(data)) as f:
        f.extractall(t)
    open(os.path.join(t, "READY"), "w").close()
    if os.path.isdir(d) and not os.path.isfile(os.path.join(d, "READY")):
        shutil.rmtree(d, ignore_errors=True)
    try:
        os.rename(t, d)
    except OSError:
        shutil.rmtree(t, ignore_errors=True)
        if not os.path.isfile(os.path.join(d, "READY")):
            raise
env = dict(os.environ, OPENKERNEL_REMOTE_CACHE=c, PYTHONDONTWRITEBYTECODE="1")
env.update(a.split("=", 1) for a in sys.argv[2:])
env["PYTHONPATH"] = os.path.join(d, "python") + os.pathsep + env.get("PYTHONPATH", "")
os.execve(sys.executable, [sys.executable, "-u", "-m", "openkernel_worker"], env)
)";

// Sends the package when the bootstrap asks for it.
util::Result<void> exchange_package(const WorkerPackage& package, util::Subprocess& srun,
                                    const eval::NextLine& next_line) {
  auto line = next_line();
  if (!line) return std::unexpected(line.error());
  const json said = json::parse(*line, nullptr, false);
  if (!said.is_object() || said.value("type", "") != "ship")
    return fail(ErrorKind::kInternal,
                "the srun bootstrap said something unexpected: " + line->substr(0, 300));
  if (said.value("have", false)) return {};
  auto tar = package_tar(package);
  if (!tar) return std::unexpected(tar.error());
  return srun.write_all(std::to_string(tar->size()) + "\n" + *tar);
}

// A job name of this launch alone: the engine's pid, a serial and a random part.
std::string unique_job_name() {
  static std::atomic<int> serial{0};
  std::random_device rd;
  return fmt::format("openkernel-worker-{}-{}-{:06x}", ::getpid(), ++serial, rd() & 0xffffff);
}

void scancel(const std::string& job_name) {
  if (job_name.empty()) return;
  util::SpawnOptions so;
  so.argv = {util::getenv_str("OPENKERNEL_SCANCEL").value_or("scancel"), "--name=" + job_name};
  so.env_unset = util::secret_env_names();
  (void)util::run_capture(so, kScancelTimeout);
}

class SlurmTransport final : public StagedTransport {
 public:
  SlurmTransport(RemoteWorkerOptions o, WorkerPackage p)
      : opts_(std::move(o)), package_(std::move(p)) {}

  std::string describe() const override { return opts_.host.url(); }

  void close(util::Subprocess& srun) override {
    if (srun.pid() <= 0) return;
    srun.close_stdin();  // the idle worker exits, its step ends, srun releases the allocation
    const auto until = std::chrono::steady_clock::now() + kReleaseGrace;
    auto status = srun.try_wait();
    while (!status && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      status = srun.try_wait();
    }
    if (!status || !status->exited || status->code != 0) scancel(job_);
  }

  util::Result<eval::Worker> connect() {
    job_ = unique_job_name();
    eval::Launch launch;
    launch.argv = srun_argv(opts_, package_.hash, job_);
    launch.label = fmt::format("{} -m openkernel_worker in a SLURM allocation ({})", opts_.python,
                               opts_.host.url());
    launch.before_hello = [this](util::Subprocess& srun, const eval::NextLine& next_line) {
      return exchange_package(package_, srun, next_line);
    };
    auto w = eval::Worker::connect(launch, std::max(opts_.start_timeout, kSlurmStartTimeout),
                                   opts_.cancel);
    if (!w) scancel(job_);  // an allocation granted, or still asked for, by the srun killed
    return w;
  }

 protected:
  util::Result<eval::Worker> fresh() override {
    scancel(job_);  // the lost job, if it still holds its allocation
    return connect();
  }

 private:
  RemoteWorkerOptions opts_;
  WorkerPackage package_;
  std::string job_;  // the current allocation's job name
};

}  // namespace

std::vector<std::string> srun_argv(const RemoteWorkerOptions& opts, const std::string& hash,
                                   const std::string& job_name) {
  std::vector<std::string> argv = {util::getenv_str("OPENKERNEL_SRUN").value_or("srun")};
  argv.insert(argv.end(), opts.host.srun_args.begin(), opts.host.srun_args.end());
  argv.insert(argv.end(), {"--job-name=" + job_name, "--ntasks=1", "--unbuffered", opts.python,
                           "-u", "-c", kBootstrap, hash, std::string(eval::kWatchdogEnv) + "=1"});
  for (const auto& [k, v] : opts.env_set) argv.push_back(k + "=" + v);
  return argv;
}

util::Result<eval::Worker> start_slurm_worker(const RemoteWorkerOptions& opts) {
  auto package = worker_package(opts.resource_root);
  if (!package) return std::unexpected(package.error());
  auto transport = std::make_unique<SlurmTransport>(opts, std::move(*package));
  auto w = transport->connect();
  if (!w) return w;
  w->attach(std::move(transport));
  return w;
}

}  // namespace ok::remote
