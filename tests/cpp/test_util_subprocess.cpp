#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "util/secrets.hpp"
#include "util/subprocess.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ok::util::ErrorKind;
using ok::util::ExitStatus;
using ok::util::run_capture;
using ok::util::SpawnOptions;
using ok::util::Subprocess;

namespace {

std::chrono::steady_clock::time_point in(std::chrono::milliseconds d) {
  return std::chrono::steady_clock::now() + d;
}

Subprocess spawn_sh(const std::string& script) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  auto p = Subprocess::spawn(o);
  EXPECT_TRUE(p.has_value()) << p.error().message;
  return std::move(*p);
}

// True once `pid` no longer runs: gone, or a zombie waiting for a reaper that is not us.
bool gone(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (::kill(pid, 0) != 0) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    auto close = line.rfind(')');
    if (close != std::string::npos && line.size() > close + 2 && line[close + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ok-subprocess-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

TEST(ExitStatus, DescribesNormalExit) {
  EXPECT_EQ((ExitStatus{true, 0}).describe(), "exited with status 0");
  EXPECT_EQ((ExitStatus{true, 3}).describe(), "exited with status 3");
}

TEST(ExitStatus, DescribesSignalByNumberAndName) {
  std::string d = ExitStatus{false, SIGSEGV}.describe();
  EXPECT_NE(d.find("killed by signal 11"), std::string::npos) << d;
  EXPECT_NE(d.find("Segmentation fault"), std::string::npos) << d;
}

TEST(Subprocess, SpawnRejectsEmptyArgv) {
  auto p = Subprocess::spawn(SpawnOptions{});
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().kind, ErrorKind::kInternal);
}

TEST(Subprocess, ReadsLinesInOrderThenReportsClosed) {
  auto p = spawn_sh("echo hello; echo world");
  auto a = p.read_line(in(5s));
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_EQ(*a, "hello");
  auto b = p.read_line(in(5s));
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(*b, "world");
  auto c = p.read_line(in(5s));
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().kind, ErrorKind::kInternal);
  EXPECT_NE(c.error().message.find("closed"), std::string::npos) << c.error().message;
  auto st = p.wait();
  EXPECT_TRUE(st.exited);
  EXPECT_EQ(st.code, 0);
}

TEST(Subprocess, WritesToStdinAndReadsEcho) {
  SpawnOptions o;
  o.argv = {"cat"};
  auto p = Subprocess::spawn(o);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  ASSERT_TRUE(p->write_all("first\nsecond\n").has_value());
  EXPECT_EQ(p->read_line(in(5s)).value_or("<error>"), "first");
  EXPECT_EQ(p->read_line(in(5s)).value_or("<error>"), "second");
  p->close_stdin();
  auto end = p->read_line(in(5s));
  EXPECT_FALSE(end.has_value());
  EXPECT_TRUE(p->wait().exited);
}

TEST(Subprocess, ReadsLongLineSpanningManyReads) {
  auto p = spawn_sh("head -c 300000 /dev/zero | tr '\\0' x; echo");
  auto line = p.read_line(in(10s));
  ASSERT_TRUE(line.has_value()) << line.error().message;
  EXPECT_EQ(line->size(), 300000u);
}

TEST(Subprocess, ReadLineTimesOutAtTheDeadline) {
  auto p = spawn_sh("sleep 30");
  auto start = std::chrono::steady_clock::now();
  auto r = p.read_line(in(200ms));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, ErrorKind::kTimeout);
  EXPECT_GE(took, 190ms);
  EXPECT_LT(took, 2s);
}

TEST(Subprocess, DeadlineInThePastStillReturnsBufferedLine) {
  auto p = spawn_sh("echo a; echo b; sleep 30");
  ASSERT_EQ(p.read_line(in(5s)).value_or("<error>"), "a");
  // "b" may already be buffered; either way a past deadline must not block.
  auto r = p.read_line(std::chrono::steady_clock::now() - 1s);
  if (r) {
    EXPECT_EQ(*r, "b");
  } else {
    EXPECT_EQ(r.error().kind, ErrorKind::kTimeout);
  }
}

TEST(Subprocess, CapturesStderrSeparately) {
  auto p = spawn_sh("echo oops >&2; echo out");
  EXPECT_EQ(p.read_line(in(5s)).value_or("<error>"), "out");
  p.wait();
  std::string err = p.take_stderr();
  EXPECT_NE(err.find("oops"), std::string::npos) << err;
  EXPECT_EQ(p.take_stderr(), "");
}

TEST(Subprocess, TakeStderrKeepsTheTail) {
  auto p = spawn_sh("printf 'AAAAAAAAAABBBBB' >&2");
  p.wait();
  EXPECT_EQ(p.take_stderr(5), "...BBBBB");
}

TEST(Subprocess, StderrCanGoToAFile) {
  TempDir dir;
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "echo to-file >&2"};
  o.stderr_file = dir.path() / "err.log";
  auto p = Subprocess::spawn(o);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  p->wait();
  std::ifstream f(dir.path() / "err.log");
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), "to-file\n");
  EXPECT_EQ(p->take_stderr(), "");
}

TEST(Subprocess, SetsAndUnsetsEnvironmentAndCwd) {
  TempDir dir;
  ::setenv("OK_TEST_DROP_ME", "present", 1);
  ::setenv("OK_TEST_REPLACE_ME", "old", 1);
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c",
            "echo \"${OK_TEST_DROP_ME:-unset}\" \"$OK_TEST_REPLACE_ME\" \"$OK_TEST_NEW\"; pwd"};
  o.env_set = {{"OK_TEST_REPLACE_ME", "new"}, {"OK_TEST_NEW", "added"}};
  o.env_unset = {"OK_TEST_DROP_ME"};
  o.cwd = dir.path();
  auto p = Subprocess::spawn(o);
  ::unsetenv("OK_TEST_DROP_ME");
  ::unsetenv("OK_TEST_REPLACE_ME");
  ASSERT_TRUE(p.has_value()) << p.error().message;
  EXPECT_EQ(p->read_line(in(5s)).value_or("<error>"), "unset new added");
  EXPECT_EQ(fs::canonical(p->read_line(in(5s)).value_or("/nonexistent-dir")),
            fs::canonical(dir.path()));
}

TEST(Subprocess, ReportsExitCode) {
  auto p = spawn_sh("exit 3");
  auto st = p.wait();
  EXPECT_TRUE(st.exited);
  EXPECT_EQ(st.code, 3);
  EXPECT_EQ(st.describe(), "exited with status 3");
}

TEST(Subprocess, ReportsDeathBySignal) {
  auto p = spawn_sh("kill -SEGV $$");
  auto st = p.wait();
  EXPECT_FALSE(st.exited);
  EXPECT_EQ(st.code, SIGSEGV);
  EXPECT_NE(st.describe().find("signal 11"), std::string::npos) << st.describe();
}

TEST(Subprocess, MissingProgramExits127) {
  SpawnOptions o;
  o.argv = {"/nonexistent/openkernel-no-such-program"};
  auto p = Subprocess::spawn(o);
  ASSERT_TRUE(p.has_value());
  auto st = p->wait();
  EXPECT_TRUE(st.exited);
  EXPECT_EQ(st.code, 127);
  EXPECT_NE(p->take_stderr().find("exec failed"), std::string::npos);
}

TEST(Subprocess, TryWaitIsEmptyWhileRunningAndSetAfterExit) {
  auto p = spawn_sh("read line; exit 4");
  EXPECT_FALSE(p.try_wait().has_value());
  p.close_stdin();
  std::optional<ExitStatus> st;
  for (int i = 0; i < 500 && !st; ++i) {
    st = p.try_wait();
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->exited);
  EXPECT_EQ(st->code, 4);
  EXPECT_EQ(p.wait().code, 4);  // cached
}

TEST(Subprocess, WaitKillsAfterGrace) {
  auto p = spawn_sh("exec sleep 30");
  auto start = std::chrono::steady_clock::now();
  auto st = p.wait(100ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_FALSE(st.exited);
  EXPECT_EQ(st.code, SIGKILL);
}

TEST(Subprocess, KillGroupDeliversSignal) {
  auto p = spawn_sh("exec sleep 30");
  p.kill_group(SIGTERM);
  auto st = p.wait(5s);
  EXPECT_FALSE(st.exited);
  EXPECT_EQ(st.code, SIGTERM);
}

TEST(Subprocess, DestructorKillsChildAndItsGroup) {
  pid_t child = -1;
  pid_t grandchild = -1;
  {
    auto p = spawn_sh("sleep 30 & echo $!; wait");
    child = p.pid();
    auto line = p.read_line(in(5s));
    ASSERT_TRUE(line.has_value()) << line.error().message;
    grandchild = std::stoi(*line);
    ASSERT_EQ(::kill(grandchild, 0), 0);
  }
  EXPECT_TRUE(gone(child));
  EXPECT_TRUE(gone(grandchild));
}

TEST(Subprocess, MoveTransfersOwnership) {
  pid_t pid = -1;
  {
    auto a = spawn_sh("exec sleep 30");
    pid = a.pid();
    Subprocess b(std::move(a));
    EXPECT_EQ(b.pid(), pid);
    EXPECT_EQ(a.pid(), -1);  // NOLINT(bugprone-use-after-move): checking the moved-from state
    auto c = spawn_sh("exit 0");
    c = std::move(b);  // c's old child is reaped, b's child now belongs to c
    EXPECT_EQ(c.pid(), pid);
    EXPECT_EQ(::kill(pid, 0), 0);
  }
  EXPECT_TRUE(gone(pid));
}

TEST(Subprocess, WriteAfterChildExitFailsWithoutSigpipe) {
  auto p = spawn_sh("exit 0");
  p.wait();
  std::string big(1 << 20, 'x');
  auto w = p.write_all(big);
  EXPECT_FALSE(w.has_value());
}

// A descriptor without CLOEXEC (as one this process inherited from its own parent) reaches a child
// only when the spawn names it.
TEST(Subprocess, OnlyNamedDescriptorsCrossExec) {
  const int fd = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC
  ASSERT_GE(fd, 3);
  const std::string probe =
      "test -e /proc/self/fd/" + std::to_string(fd) + " && echo open || echo closed";
  auto child_sees = [&](std::vector<int> inherit) {
    SpawnOptions so;
    so.argv = {"/bin/sh", "-c", probe};
    so.inherit_fds = std::move(inherit);
    auto p = Subprocess::spawn(so);
    EXPECT_TRUE(p.has_value());
    auto line = p->read_line(std::chrono::steady_clock::now() + 5s);
    p->wait();
    return line ? *line : std::string("(nothing)");
  };
  EXPECT_EQ(child_sees({}), "closed");
  EXPECT_EQ(child_sees({fd}), "open");
  ::close(fd);
}

TEST(RunCapture, ReturnsOutputAndStatus) {
  auto r = run_capture({"/bin/sh", "-c", "echo one; echo two; exit 5"}, 5000ms);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->output, "one\ntwo\n");
  EXPECT_TRUE(r->status.exited);
  EXPECT_EQ(r->status.code, 5);
}

TEST(RunCapture, MergesStderrOnRequest) {
  auto merged = run_capture({"/bin/sh", "-c", "echo out; echo err >&2"}, 5000ms, true);
  ASSERT_TRUE(merged.has_value());
  EXPECT_NE(merged->output.find("out"), std::string::npos);
  EXPECT_NE(merged->output.find("err"), std::string::npos);
  auto separate = run_capture({"/bin/sh", "-c", "echo out; echo err >&2"}, 5000ms, false);
  ASSERT_TRUE(separate.has_value());
  EXPECT_EQ(separate->output, "out\n");
}

TEST(RunCapture, TimesOutAndKills) {
  auto start = std::chrono::steady_clock::now();
  auto r = run_capture({"/bin/sh", "-c", "sleep 30"}, 300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, ErrorKind::kTimeout);
  EXPECT_NE(r.error().message.find("/bin/sh"), std::string::npos);
}

TEST(RunCapture, ReportsSignalDeath) {
  auto r = run_capture({"/bin/sh", "-c", "kill -KILL $$"}, 5000ms);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->status.exited);
  EXPECT_EQ(r->status.code, SIGKILL);
}

// The last line of output is kept when it has no trailing newline.
TEST(RunCapture, KeepsFinalLineWithoutNewline) {
  auto r = run_capture({"/bin/sh", "-c", "printf 'no newline'"}, 5000ms);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->output, "no newline\n");
}

// read_line stops polling a stderr pipe that reached end of file instead of spinning.
TEST(Subprocess, ReadLineDoesNotSpinAfterChildClosesStderr) {
  auto p = spawn_sh("exec 2>&-; sleep 1; echo done");
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  EXPECT_EQ(p.read_line(in(5s)).value_or("<error>"), "done");
  ::getrusage(RUSAGE_SELF, &after);
  auto cpu_us = [](const rusage& r) {
    return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000L + r.ru_utime.tv_usec +
           r.ru_stime.tv_usec;
  };
  EXPECT_LT(cpu_us(after) - cpu_us(before), 300000L);
}

// spawn returns early when the stderr file cannot be opened, leaking the four pipe ends.
TEST(Subprocess, FailedSpawnLeaksNoDescriptors) {
  auto count_fds = [] {
    return std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator{});
  };
  auto before = count_fds();
  SpawnOptions o;
  o.argv = {"/bin/true"};
  o.stderr_file = "/nonexistent-dir/openkernel/err.log";
  auto p = Subprocess::spawn(o);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(count_fds(), before);
}

TEST(SecretEnv, NamesThatLookLikeCredentials) {
  using ok::util::is_secret_env_name;
  for (const char* name : {"OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
                           "SSH_AUTH_SOCK", "db_password", "MY_CREDENTIALS", "SESSION_COOKIE"})
    EXPECT_TRUE(is_secret_env_name(name)) << name;
  for (const char* name : {"PATH", "HOME", "TORCH_CUDA_ARCH_LIST", "CUDA_VISIBLE_DEVICES"})
    EXPECT_FALSE(is_secret_env_name(name)) << name;
}

TEST(SecretEnv, ListsThisProcessesSecrets) {
  ::setenv("OPENKERNEL_TEST_API_KEY", "marker", 1);
  auto names = ok::util::secret_env_names();
  ::unsetenv("OPENKERNEL_TEST_API_KEY");
  EXPECT_NE(std::find(names.begin(), names.end(), "OPENKERNEL_TEST_API_KEY"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "PATH"), names.end());
}
