// Process-wide cancellation of LLM calls: Ctrl-C sets a flag that every call polls (curl's
// progress callback, backoff sleeps, waits for a concurrency slot).
//
// The flag is a lock-free atomic, safe to set from a signal handler and read from any thread.
#pragma once

#include <atomic>

namespace ok::llm {

std::atomic<bool>& cancel_flag();

// Installs a SIGINT handler: the first Ctrl-C sets cancel_flag(), so calls in flight end with a
// kCancelled error; a second Ctrl-C ends the process at once (the default action).
void install_interrupt_handler();

}  // namespace ok::llm
