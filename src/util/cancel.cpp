#include "util/cancel.hpp"

#include <signal.h>

namespace ok::util {

namespace {
std::atomic<bool> g_cancel{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_sigint(int) {
  g_cancel.store(true);
}
}  // namespace

std::atomic<bool>& cancel_flag() {
  return g_cancel;
}

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &sa, nullptr);
}

}  // namespace ok::util
