// Steering a running session from another thread (the terminal UI's p and s keys). The session's
// loop reads it between steps: while paused it issues no new generation (those in flight finish
// and are evaluated, and Ctrl-C and a stop are still honoured); after request_stop it issues
// nothing new, lets every attempt in flight be evaluated and recorded, and ends with stop reason
// `stopped` (status `stopped`, resumable with `openkernel optimize --resume ID`). The loop tells
// its observer each change of state (Observer::control).
//
// Thread-safe: any thread may call any method. A Control outlives the session it is given to.
#pragma once

#include <atomic>
#include <string>

namespace ok::optimize {

class Control {
 public:
  void pause() { paused_ = true; }
  void resume() { paused_ = false; }
  bool paused() const { return paused_; }
  // Graceful: the attempts in flight finish. A stop cannot be taken back.
  void request_stop() { stop_ = true; }
  bool stop_requested() const { return stop_; }
  // What the loop reports: "stopping" once a stop was asked, else "paused" or "running".
  std::string state() const;

 private:
  std::atomic<bool> paused_{false}, stop_{false};
};

}  // namespace ok::optimize
