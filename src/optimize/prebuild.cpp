#include "optimize/prebuild.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace ok::optimize {

using nlohmann::json;

bool wants_prebuild(const std::string& source) {
  return source.find("load_inline") != std::string::npos ||
         source.find("cpp_extension") != std::string::npos;
}

int default_prebuild_slots(unsigned cores) {
  return std::clamp(static_cast<int>(cores / 5), 1, 4);
}

PreBuilder::PreBuilder(StartWorker start, json request, int slots, double timeout_s, Warn warn)
    : start_(std::move(start)),
      request_(std::move(request)),
      timeout_s_(timeout_s),
      warn_(std::move(warn)),
      slots_(std::max(1, slots)) {
  request_["op"] = "prebuild";
  for (int i = 0; i < slots_; ++i) threads_.emplace_back([this] { slot_main(); });
}

PreBuilder::~PreBuilder() {
  stop();
}

void PreBuilder::submit(int number, const std::string& candidate) {
  {
    std::lock_guard lock(m_);
    if (stop_ || disabled_) return;
    queue_.emplace_back(number, candidate);
    ++submitted_;
  }
  cv_.notify_one();
}

void PreBuilder::withdraw(int number) {
  std::lock_guard lock(m_);
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [number](const auto& q) { return q.first == number; });
  if (it == queue_.end()) return;
  queue_.erase(it);
  ++withdrawn_;
}

void PreBuilder::stop() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

// One slot: its own build worker, started at once (its imports overlap the session's start) and
// again after a failure; one pre-build at a time. Worker::call polls stop_ and kills the worker
// (and with it the sandboxed candidate and compiles) when it is set.
void PreBuilder::slot_main() {
  std::optional<eval::Worker> worker;
  const auto limit = std::chrono::seconds(static_cast<long long>(timeout_s_ * 3 + 120));
  while (!stop_) {
    if (!worker || !worker->alive()) {
      worker.reset();
      auto w = start_();
      if (!w) {
        bool first = false;
        {
          std::lock_guard lock(m_);
          first = !disabled_;
          disabled_ = true;
          queue_.clear();
        }
        if (first && warn_ && !stop_)
          warn_("pre-builds are off: the build worker did not start: " + w.error().message);
        return;
      }
      worker.emplace(std::move(*w));
    }
    std::pair<int, std::string> job;
    {
      std::unique_lock lock(m_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      ++started_;
    }
    json req = request_;
    req["candidate"] = job.second;
    const auto t0 = std::chrono::steady_clock::now();
    auto reply = worker->call(req, limit, &stop_);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (stop_) return;
    record(reply ? *reply : json{{"status", "error"}}, s);
  }
}

void PreBuilder::record(const json& reply, double seconds) {
  std::lock_guard lock(m_);
  ++status_[reply.value("status", "error")];
  seconds_ += seconds;
  if (reply.contains("builds") && reply["builds"].is_object() &&
      reply["builds"].contains("units") && reply["builds"]["units"].is_object())
    for (const auto& [k, v] : reply["builds"]["units"].items())
      if (v.is_number_integer()) units_[k] += v.get<int>();
}

json PreBuilder::summary() const {
  std::lock_guard lock(m_);
  return {{"slots", slots_},
          {"submitted", submitted_},
          {"started", started_},
          {"withdrawn", withdrawn_},
          {"status", status_},
          {"units", units_},
          {"seconds", std::round(seconds_ * 1000) / 1000}};
}

}  // namespace ok::optimize
