#include "llm/limiter.hpp"

#include <chrono>
#include <map>
#include <memory>

namespace ok::llm {

bool Semaphore::acquire(const std::atomic<bool>* cancel) {
  std::unique_lock lock(mu_);
  while (used_ >= capacity_) {
    if (cancel && cancel->load()) return false;
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
  if (cancel && cancel->load()) return false;
  ++used_;
  return true;
}

void Semaphore::release() {
  {
    std::lock_guard lock(mu_);
    --used_;
  }
  cv_.notify_one();
}

void Semaphore::set_capacity(int capacity) {
  {
    std::lock_guard lock(mu_);
    capacity_ = capacity < 1 ? 1 : capacity;
  }
  cv_.notify_all();
}

int Semaphore::in_use() const {
  std::lock_guard lock(mu_);
  return used_;
}

Semaphore& provider_semaphore(const std::string& key, int capacity) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Semaphore>> table;
  std::lock_guard lock(mu);
  auto& slot = table[key];
  if (!slot) {
    slot = std::make_unique<Semaphore>(capacity);
  } else {
    slot->set_capacity(capacity);
  }
  return *slot;
}

}  // namespace ok::llm
