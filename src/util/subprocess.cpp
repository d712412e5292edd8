#include "util/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace ok::util {

std::string ExitStatus::describe() const {
  if (exited) return "exited with status " + std::to_string(code);
  const char* name = strsignal(code);
  return "killed by signal " + std::to_string(code) + " (" + (name ? name : "?") + ")";
}

static void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

Result<Subprocess> Subprocess::spawn(const SpawnOptions& opts) {
  if (opts.argv.empty()) return fail(ErrorKind::kInternal, "spawn: empty argv");
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  int err_file = -1, out_file = -1;
  auto close_all = [&] {
    for (int* fd : {&in_pipe[0], &in_pipe[1], &out_pipe[0], &out_pipe[1], &err_pipe[0],
                    &err_pipe[1], &err_file, &out_file})
      close_fd(*fd);
  };
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || (!opts.stdout_file && pipe2(out_pipe, O_CLOEXEC) != 0)) {
    std::string msg = std::string("pipe: ") + strerror(errno);
    close_all();
    return fail(ErrorKind::kInternal, msg);
  }
  if (opts.stdout_file) {
    out_file = ::open(opts.stdout_file->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out_file < 0) {
      close_all();
      return fail(ErrorKind::kInternal, "cannot open " + opts.stdout_file->string());
    }
  }
  if (opts.stderr_file) {
    err_file = ::open(opts.stderr_file->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (err_file < 0) {
      close_all();
      return fail(ErrorKind::kInternal, "cannot open " + opts.stderr_file->string());
    }
  } else if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    std::string msg = std::string("pipe: ") + strerror(errno);
    close_all();
    return fail(ErrorKind::kInternal, msg);
  }

  // Build argv and envp before fork: only async-signal-safe calls in the child.
  std::vector<char*> argv;
  for (const auto& a : opts.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    std::string key = kv.substr(0, kv.find('='));
    bool drop = opts.env_set.count(key) > 0;
    for (const auto& u : opts.env_unset) drop = drop || u == key;
    if (!drop) env_store.push_back(std::move(kv));
  }
  for (const auto& [k, v] : opts.env_set) env_store.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string cwd = opts.cwd ? opts.cwd->string() : "";

  const pid_t parent = getpid();
  const std::vector<int>& inherit = opts.inherit_fds;
  pid_t pid = fork();
  if (pid < 0) {
    std::string msg = std::string("fork: ") + strerror(errno);
    close_all();
    return fail(ErrorKind::kInternal, msg);
  }
  if (pid == 0) {
    setpgid(0, 0);
    if (opts.parent_death_signal != 0) {
      prctl(PR_SET_PDEATHSIG, opts.parent_death_signal);
      if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    }
    dup2(in_pipe[0], 0);
    dup2(out_file >= 0 ? out_file : out_pipe[1], 1);
    dup2(err_file >= 0 ? err_file : err_pipe[1], 2);
    // Only stdio and `inherit` cross exec, also descriptors this process itself inherited without
    // CLOEXEC (an optimize child of a sweep holds the sweep's lock that way: its own workers
    // must not keep holding it after it exits). Before Linux 5.11 (no CLOSE_RANGE_CLOEXEC): one
    // descriptor at a time, up to the open-files limit.
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
      const long most = sysconf(_SC_OPEN_MAX);
      for (int fd = 3; fd < (most > 0 ? most : 1024); ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    for (int fd : inherit) fcntl(fd, F_SETFD, 0);  // on the child's copy only
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(127);
    execvpe(argv[0], argv.data(), envp.data());
    const char msg[] = "exec failed\n";
    (void)!::write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  setpgid(pid, pid);
  Subprocess p;
  p.pid_ = pid;
  ::close(in_pipe[0]);
  p.in_fd_ = in_pipe[1];
  if (out_file >= 0) {
    ::close(out_file);
  } else {
    ::close(out_pipe[1]);
    p.out_fd_ = out_pipe[0];
  }
  if (err_file >= 0) {
    ::close(err_file);
  } else {
    ::close(err_pipe[1]);
    p.err_fd_ = err_pipe[0];
    fcntl(p.err_fd_, F_SETFL, fcntl(p.err_fd_, F_GETFL) | O_NONBLOCK);
  }
  return p;
}

Subprocess::Subprocess(Subprocess&& o) noexcept {
  *this = std::move(o);
}

Subprocess& Subprocess::operator=(Subprocess&& o) noexcept {
  if (this != &o) {
    release();
    pid_ = std::exchange(o.pid_, -1);
    in_fd_ = std::exchange(o.in_fd_, -1);
    out_fd_ = std::exchange(o.out_fd_, -1);
    err_fd_ = std::exchange(o.err_fd_, -1);
    out_buf_ = std::move(o.out_buf_);
    err_buf_ = std::move(o.err_buf_);
    status_ = o.status_;
  }
  return *this;
}

Subprocess::~Subprocess() {
  release();
}

void Subprocess::release() {
  close_fd(in_fd_);
  if (pid_ > 0 && !status_) {
    kill_group(SIGKILL);
    wait(std::chrono::milliseconds(0));
  }
  close_fd(out_fd_);
  close_fd(err_fd_);
  pid_ = -1;
}

Result<void> Subprocess::write_all(std::string_view data) {
  ::signal(SIGPIPE, SIG_IGN);
  while (!data.empty()) {
    ssize_t n = ::write(in_fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(ErrorKind::kInternal, std::string("write to child closed: ") + strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

void Subprocess::drain_stderr_nonblocking() {
  if (err_fd_ < 0) return;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(err_fd_, buf, sizeof buf);
    if (n == 0) {  // end of file: stop polling it
      close_fd(err_fd_);
      break;
    }
    if (n < 0) break;
    err_buf_.append(buf, static_cast<size_t>(n));
    if (err_buf_.size() > (1u << 20)) err_buf_.erase(0, err_buf_.size() - (1u << 19));
  }
}

Result<std::string> Subprocess::read_line(std::chrono::steady_clock::time_point deadline) {
  if (out_fd_ < 0 && out_buf_.empty())
    return fail(ErrorKind::kInternal, "the child's stdout is closed or goes to a file");
  while (true) {
    auto nl = out_buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = out_buf_.substr(0, nl);
      out_buf_.erase(0, nl + 1);
      return line;
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return fail(ErrorKind::kTimeout, "timed out waiting for the child");
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    int nfds = err_fd_ >= 0 ? 2 : 1;
    int r = ::poll(fds, nfds, static_cast<int>(std::min<long long>(ms, 1000)));
    if (r < 0 && errno != EINTR) return fail(ErrorKind::kInternal, "poll failed");
    if (nfds == 2 && (fds[1].revents & (POLLIN | POLLHUP))) drain_stderr_nonblocking();
    if (r > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      char buf[65536];
      ssize_t n = ::read(out_fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        drain_stderr_nonblocking();
        if (!out_buf_.empty()) {  // a last line without its newline
          std::string line = std::move(out_buf_);
          out_buf_.clear();
          return line;
        }
        return fail(ErrorKind::kInternal, "the child closed its output");
      }
      out_buf_.append(buf, static_cast<size_t>(n));
    }
  }
}

std::string Subprocess::take_stderr(size_t max) {
  drain_stderr_nonblocking();
  std::string s = std::move(err_buf_);
  err_buf_.clear();
  if (s.size() > max) s = "..." + s.substr(s.size() - max);
  return s;
}

void Subprocess::close_stdin() {
  close_fd(in_fd_);
}

void Subprocess::kill_group(int sig) {
  if (pid_ > 0 && !status_) ::kill(-pid_, sig);
}

std::optional<ExitStatus> Subprocess::try_wait() {
  if (status_) return status_;
  if (pid_ <= 0) return std::nullopt;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    ExitStatus es;
    es.exited = WIFEXITED(st);
    es.code = es.exited ? WEXITSTATUS(st) : WTERMSIG(st);
    status_ = es;
    ::kill(-pid_, SIGKILL);  // stragglers in the group
  }
  return status_;
}

ExitStatus Subprocess::wait(std::chrono::milliseconds grace) {
  auto until = std::chrono::steady_clock::now() + grace;
  while (!try_wait()) {
    if (std::chrono::steady_clock::now() >= until) {
      kill_group(SIGKILL);
      int st = 0;
      if (::waitpid(pid_, &st, 0) == pid_) {
        ExitStatus es;
        es.exited = WIFEXITED(st);
        es.code = es.exited ? WEXITSTATUS(st) : WTERMSIG(st);
        status_ = es;
      } else {
        status_ = ExitStatus{false, SIGKILL};
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return *status_;
}

Result<RunOutput> run_capture(const std::vector<std::string>& argv,
                              std::chrono::milliseconds timeout, bool merge_stderr) {
  SpawnOptions o;
  o.argv = argv;
  return run_capture(o, timeout, merge_stderr);
}

Result<RunOutput> run_capture(const SpawnOptions& o, std::chrono::milliseconds timeout,
                              bool merge_stderr) {
  const auto& argv = o.argv;
  auto p = Subprocess::spawn(o);
  if (!p) return std::unexpected(p.error());
  p->close_stdin();
  RunOutput out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto line = p->read_line(deadline);
    if (!line) {
      if (line.error().kind == ErrorKind::kTimeout) {
        p->kill_group(SIGKILL);
        p->wait();
        return fail(ErrorKind::kTimeout, "command timed out: " + argv[0]);
      }
      break;
    }
    out.output += *line + "\n";
  }
  if (merge_stderr) out.output += p->take_stderr(1 << 20);
  out.status = p->wait(timeout);
  return out;
}

}  // namespace ok::util
