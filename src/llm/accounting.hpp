// What calls cost: the price of one call from its usage, and a Ledger of a session's totals that
// enforces a spending limit (--budget-usd).
//
// Ledger is thread-safe. The limit stops new calls once the spent amount reaches it; calls already
// in flight finish, so a session can overshoot by the cost of its concurrent calls.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

#include "llm/registry.hpp"
#include "llm/types.hpp"
#include "util/error.hpp"

namespace ok::llm {

struct Cost {
  std::optional<double> usd;  // nullopt: no price known and none reported
  bool estimated = false;     // from estimated token counts
};

// A cost the API reported wins; else tokens times the registry's prices (cached input at the
// cached price when the registry has one).
Cost compute_cost(const std::optional<ModelInfo>& info, const Usage& usage);

struct Totals {
  int64_t calls = 0;  // finished calls, failed ones included
  int64_t failed_calls = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0;
  bool cost_estimated = false;  // some of cost_usd comes from estimated usage
  int64_t unpriced_calls = 0;   // calls whose cost is unknown (not in cost_usd)
};

class Ledger {
 public:
  explicit Ledger(std::optional<double> budget_usd = std::nullopt) : budget_(budget_usd) {}

  // kBudget once the spent amount reached the limit.
  util::Result<void> admit() const;
  void add(const Response& r);
  void add_failure();
  Totals totals() const;
  std::optional<double> budget_usd() const { return budget_; }

 private:
  mutable std::mutex mu_;
  std::optional<double> budget_;
  Totals totals_;
};

}  // namespace ok::llm
