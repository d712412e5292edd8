#include "llm/accounting.hpp"

#include <fmt/core.h>

#include "llm/types.hpp"

namespace ok::llm {

int64_t estimate_tokens(std::string_view text) {
  return static_cast<int64_t>((text.size() + 3) / 4);
}

Cost compute_cost(const std::optional<ModelInfo>& info, const Usage& usage) {
  if (usage.reported_cost_usd) return Cost{usage.reported_cost_usd, false};
  if (!info) return Cost{std::nullopt, usage.estimated};
  const int64_t cached = std::min(usage.cached_input_tokens, usage.input_tokens);
  const double cached_price = info->price_cached_in_per_mtok.value_or(info->price_in_per_mtok);
  const double usd = (static_cast<double>(usage.input_tokens - cached) * info->price_in_per_mtok +
                      static_cast<double>(cached) * cached_price +
                      static_cast<double>(usage.output_tokens) * info->price_out_per_mtok) /
                     1e6;
  return Cost{usd, usage.estimated};
}

util::Result<void> Ledger::admit() const {
  std::lock_guard lock(mu_);
  if (budget_ && totals_.cost_usd >= *budget_)
    return util::fail(util::ErrorKind::kBudget,
                      fmt::format("the budget of ${:.4f} is spent (${:.4f} over {} calls); no "
                                  "more model calls: raise --budget-usd to continue",
                                  *budget_, totals_.cost_usd, totals_.calls));
  return {};
}

void Ledger::add(const Response& r) {
  std::lock_guard lock(mu_);
  ++totals_.calls;
  totals_.input_tokens += r.usage.input_tokens;
  totals_.output_tokens += r.usage.output_tokens;
  if (r.cost_usd) {
    totals_.cost_usd += *r.cost_usd;
    totals_.cost_estimated = totals_.cost_estimated || r.cost_estimated;
  } else {
    ++totals_.unpriced_calls;
  }
}

void Ledger::add_failure() {
  std::lock_guard lock(mu_);
  ++totals_.calls;
  ++totals_.failed_calls;
}

Totals Ledger::totals() const {
  std::lock_guard lock(mu_);
  return totals_;
}

}  // namespace ok::llm
