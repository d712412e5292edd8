// Process-wide cancellation: Ctrl-C sets a flag that long-running work polls (LLM calls through
// curl's progress callback, backoff sleeps and slot waits; worker requests; sweep and baseline
// loops, which pass it on to their children).
//
// The flag is a lock-free atomic, safe to set from a signal handler and read from any thread.
#pragma once

#include <atomic>

namespace ok::util {

std::atomic<bool>& cancel_flag();

// Installs a SIGINT handler: the first Ctrl-C sets cancel_flag(), so work in flight ends with a
// kCancelled error; a second Ctrl-C ends the process at once (the default action).
void install_interrupt_handler();

}  // namespace ok::util
