// A child process with pipes, owned by RAII.
//
// Subprocess starts a program in its own process group with stdin piped from the parent, stdout
// piped or sent to a file, and stderr piped or sent to a file. The destructor kills the whole group
// and reaps it, so no child outlives its owner. Not thread-safe: one owner thread per object.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace ok::util {

struct SpawnOptions {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env_set;  // added to (or replacing in) the inherited env
  std::vector<std::string> env_unset;
  std::optional<std::filesystem::path> cwd;
  std::optional<std::filesystem::path> stderr_file;  // else stderr is captured into a pipe
  std::optional<std::filesystem::path> stdout_file;  // else stdout is a pipe (read_line)
  // Sent to the child when the thread that spawned it exits (0: none; Linux PR_SET_PDEATHSIG).
  int parent_death_signal = 0;
  // Descriptors the child keeps across exec; every other one but stdio is closed on exec, also one
  // this process inherited without CLOEXEC.
  std::vector<int> inherit_fds;
};

struct ExitStatus {
  bool exited = false;  // normal exit
  int code = 0;         // exit code when exited, else the signal number
  std::string describe() const;
};

class Subprocess {
 public:
  static Result<Subprocess> spawn(const SpawnOptions& opts);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }

  Result<void> write_all(std::string_view data);
  // Reads one '\n'-terminated line (without the newline). kTimeout when the deadline passes,
  // kInternal with "closed" in the message when the child closed its stdout.
  Result<std::string> read_line(std::chrono::steady_clock::time_point deadline);
  // Drains what the child wrote to stderr so far (pipe mode only), keeping the last `max` bytes.
  std::string take_stderr(size_t max = 16384);

  void close_stdin();
  void kill_group(int sig);
  // Waits for exit, killing the group with SIGKILL after `grace`.
  ExitStatus wait(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));
  std::optional<ExitStatus> try_wait();

 private:
  Subprocess() = default;
  void drain_stderr_nonblocking();
  void release();

  pid_t pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_buf_;
  std::string err_buf_;
  std::optional<ExitStatus> status_;
};

// Runs a command to completion and returns its stdout (stderr merged when merge_stderr).
struct RunOutput {
  ExitStatus status;
  std::string output;
};
Result<RunOutput> run_capture(const std::vector<std::string>& argv,
                              std::chrono::milliseconds timeout, bool merge_stderr = true);
// The same for a program started with `opts` (its environment changes, working folder).
Result<RunOutput> run_capture(const SpawnOptions& opts, std::chrono::milliseconds timeout,
                              bool merge_stderr = true);

}  // namespace ok::util
