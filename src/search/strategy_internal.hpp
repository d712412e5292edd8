// Internal to src/search: what strategy.cpp (the population's logic) and strategy_json.cpp (its
// JSON form) share: the knobs' ranges, and how a record keeps only its newest failures.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ok::search::detail {

// The knobs' ranges (as documented in strategy.hpp): a mutation clamps to them, from_json rejects
// values outside them; one definition so the two cannot drift apart.
inline constexpr double kExplorationMin = 0, kExplorationMax = 3;
inline constexpr int kWindowMin = 2, kWindowMax = 12;
inline constexpr double kMinGainMin = 0.005, kMinGainMax = 0.2;
inline constexpr int kJumpMin = 1, kJumpMax = 4;
inline constexpr double kDiagnosisMin = 0, kDiagnosisMax = 3;

// Drops the oldest entries so at most the last `max` remain (a record and a loaded record alike).
inline void keep_last(std::vector<std::string>& failures, size_t max) {
  if (failures.size() > max)
    failures.erase(failures.begin(), failures.end() - static_cast<std::ptrdiff_t>(max));
}

}  // namespace ok::search::detail
