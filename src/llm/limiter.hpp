// A counting semaphore that gives up when a cancel flag is set, and the process-wide table of one
// semaphore per provider endpoint that caps concurrent calls to it.
//
// All members are thread-safe. Semaphores in the table live until the process ends.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>

namespace ok::llm {

class Semaphore {
 public:
  explicit Semaphore(int capacity) : capacity_(capacity < 1 ? 1 : capacity) {}
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;

  // Blocks for a slot; false when `cancel` became set while waiting.
  bool acquire(const std::atomic<bool>* cancel);
  void release();
  // Changes the number of slots; waiters start when slots free up.
  void set_capacity(int capacity);
  int in_use() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int capacity_;
  int used_ = 0;
};

// A held slot, released on destruction.
class Permit {
 public:
  Permit() = default;
  explicit Permit(Semaphore* s) : sem_(s) {}
  Permit(Permit&& o) noexcept : sem_(std::exchange(o.sem_, nullptr)) {}
  Permit(const Permit&) = delete;
  Permit& operator=(Permit&& o) noexcept {
    if (this != &o) {
      reset();
      sem_ = std::exchange(o.sem_, nullptr);
    }
    return *this;
  }
  ~Permit() { reset(); }
  void reset() {
    if (sem_) std::exchange(sem_, nullptr)->release();
  }

 private:
  Semaphore* sem_ = nullptr;
};

// The semaphore for `key` (provider and base URL), created with `capacity` slots or updated to it.
Semaphore& provider_semaphore(const std::string& key, int capacity);

}  // namespace ok::llm
