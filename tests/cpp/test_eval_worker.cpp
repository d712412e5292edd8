// eval::Worker::start with a cancel flag: a worker that has not said hello yet (here a stand-in
// package that never does) is stopped, with its process group, as soon as the flag is set.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "eval/worker.hpp"
#include "support/temp_dir.hpp"
#include "util/paths.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

TEST(WorkerStart, ACancelWhileTheWorkerStartsStopsIt) {
  ok::testing::TempDir dir("ok-worker-start");
  const fs::path package = dir.path() / "python" / "openkernel_worker";
  fs::create_directories(package);
  const fs::path pid_file = dir.path() / "pid";
  ASSERT_TRUE(ok::util::write_file(package / "__init__.py", ""));
  ASSERT_TRUE(ok::util::write_file(
      package / "__main__.py",
      "import os, time\nopen(os.environ['OK_PID_FILE'], 'w').write(str(os.getpid()))\n"
      "time.sleep(600)\n"));
  ok::eval::WorkerOptions wo;
  wo.pythons = {"/usr/bin/python3"};
  wo.resource_root = dir.path();
  wo.env_set = {{"OK_PID_FILE", pid_file.string()}};
  wo.start_timeout = std::chrono::seconds(20);
  std::atomic<bool> cancel{false};
  wo.cancel = &cancel;
  std::thread interrupter([&] {
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < until && !fs::exists(pid_file))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel.store(true);
  });
  const auto began = Clock::now();
  auto w = ok::eval::Worker::start(wo);
  interrupter.join();
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().kind, ok::util::ErrorKind::kCancelled) << w.error().message;
  EXPECT_LT(Clock::now() - began, std::chrono::seconds(15));  // not the start timeout
  auto pid = ok::util::read_file(pid_file);
  ASSERT_TRUE(pid);
  EXPECT_NE(::kill(std::stoi(*pid), 0), 0) << "the starting worker is still running";
}

}  // namespace
