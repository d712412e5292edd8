#include "remote/package.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>

#include "util/digest.hpp"
#include "util/paths.hpp"
#include "util/secrets.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

namespace ok::remote {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::fail;

util::Result<WorkerPackage> worker_package(const fs::path& resource_root) {
  WorkerPackage p;
  p.root = resource_root;
  std::error_code ec;
  const fs::path pkg = resource_root / "python/openkernel_worker";
  for (auto it = fs::recursive_directory_iterator(pkg, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (it->is_directory() && name == "__pycache__") {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || name.ends_with(".pyc")) continue;
    p.files.push_back(fs::relative(it->path(), resource_root).generic_string());
  }
  if (ec || p.files.empty())
    return fail(ErrorKind::kEnvironment, fmt::format("cannot list the worker package {}: {}",
                                                     pkg.string(), ec ? ec.message() : "no files"));
  p.files.push_back("data/skills/elementwise_ops.json");
  std::sort(p.files.begin(), p.files.end());
  std::string all;
  for (const auto& f : p.files) {
    auto text = util::read_file(resource_root / f);
    if (!text) return std::unexpected(text.error());
    all += f + '\0' + util::sha256_hex(*text) + '\0';
  }
  p.hash = util::sha256_hex(all).substr(0, 16);
  return p;
}

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> ssh_argv(const EvalHost& host, const std::string& remote_command) {
  std::vector<std::string> argv = {util::getenv_str("OPENKERNEL_SSH").value_or("ssh"),
                                   "-T",
                                   "-o",
                                   "BatchMode=yes",
                                   "-o",
                                   "ServerAliveInterval=15",
                                   "-o",
                                   "ServerAliveCountMax=4"};
  if (host.port) argv.insert(argv.end(), {"-p", std::to_string(*host.port)});
  if (!host.user.empty()) argv.insert(argv.end(), {"-l", host.user});
  argv.insert(argv.end(), {"--", host.host, remote_command});
  return argv;
}

static std::mutex shipped_mutex;
static std::set<std::string> shipped;  // host url + hash, checked by this process

static std::string key(const EvalHost& host, const WorkerPackage& package) {
  return host.url() + " " + package.hash;
}

void forget_shipped(const EvalHost& host, const WorkerPackage& package) {
  std::lock_guard lock(shipped_mutex);
  shipped.erase(key(host, package));
}

static std::string folder_expr(const WorkerPackage& package) {
  return fmt::format("c=\"{}\"; d=\"$c/worker-{}\"; ", kRemoteCacheExpr, package.hash);
}

util::Result<std::string> package_tar(const WorkerPackage& package) {
  static std::atomic<int> serial{0};  // two threads of one process pack apart
  const fs::path tar = fs::temp_directory_path() / fmt::format("openkernel-worker-{}-{}-{}.tar",
                                                               package.hash, ::getpid(), ++serial);
  std::vector<std::string> argv = {"tar", "-cf", tar.string(), "-C", package.root.string(), "--"};
  argv.insert(argv.end(), package.files.begin(), package.files.end());
  auto made = util::run_capture(argv, std::chrono::seconds(120));
  auto bytes = made && made->status.exited && made->status.code == 0
                   ? util::read_file(tar)
                   : util::Result<std::string>(fail(ErrorKind::kEnvironment, "tar failed"));
  std::error_code ec;
  fs::remove(tar, ec);
  if (!bytes)
    return fail(ErrorKind::kEnvironment,
                "cannot pack the worker package: " + (made ? made->output : made.error().message));
  return bytes;
}

// Sends the package's tar into the host's folder.
static util::Result<void> ship(const EvalHost& host, const WorkerPackage& package,
                               std::chrono::seconds timeout) {
  auto bytes = package_tar(package);
  if (!bytes) return std::unexpected(bytes.error());
  const std::string script =
      folder_expr(package) +
      "[ -f \"$d/READY\" ] && exit 0; mkdir -p \"$c\" && t=$(mktemp -d \"$c/.ship.XXXXXX\") && "
      "tar -xf - -C \"$t\" && touch \"$t/READY\" || exit 1; "
      // A folder without its mark (an interrupted copy of an older engine) is moved aside.
      "if [ -d \"$d\" ] && [ ! -f \"$d/READY\" ]; then o=$(mktemp -d \"$c/.old.XXXXXX\") && "
      "mv \"$d\" \"$o/\"; rm -rf \"$o\"; fi; "
      // POSIX mv: renamed into place, or, when a concurrent copy won, moved into it and removed.
      "mv \"$t\" \"$d\" 2>/dev/null; rm -rf \"$d/${t##*/}\" \"$t\"; [ -f \"$d/READY\" ]";
  util::SpawnOptions so;
  so.argv = ssh_argv(host, "sh -c " + shell_quote(script));
  so.env_unset = util::secret_env_names();
  auto proc = util::Subprocess::spawn(so);
  if (!proc) return std::unexpected(proc.error());
  auto wrote = proc->write_all(*bytes);
  proc->close_stdin();
  auto status = proc->wait(timeout);
  if (!wrote || !status.exited || status.code != 0)
    return fail(ErrorKind::kEnvironment,
                fmt::format("cannot copy the worker package to {} (ssh {}): {}", host.url(),
                            status.describe(), proc->take_stderr(2000)));
  return {};
}

util::Result<void> ensure_shipped(const EvalHost& host, const WorkerPackage& package,
                                  std::chrono::seconds timeout) {
  {
    std::lock_guard lock(shipped_mutex);
    if (shipped.contains(key(host, package))) return {};
  }
  const std::string check = folder_expr(package) + "[ -f \"$d/READY\" ]";
  util::SpawnOptions so;
  so.argv = ssh_argv(host, "sh -c " + shell_quote(check));
  so.env_unset = util::secret_env_names();  // as for the worker's launch: no secret travels
  auto found = util::run_capture(so, timeout);
  if (!found) return fail(ErrorKind::kEnvironment, host.url() + ": " + found.error().message);
  const auto& st = found->status;
  if (!st.exited || (st.code != 0 && st.code != 1))
    return fail(ErrorKind::kEnvironment,
                fmt::format("cannot reach the evaluation host {} (ssh {}): {}", host.url(),
                            st.describe(), util::trim(found->output)));
  if (st.code == 1)
    if (auto r = ship(host, package, timeout); !r) return r;
  std::lock_guard lock(shipped_mutex);
  shipped.insert(key(host, package));
  return {};
}

}  // namespace ok::remote
