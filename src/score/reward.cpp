#include "score/reward.hpp"

#include <algorithm>
#include <cmath>

namespace ok::score {

std::optional<double> reward(std::string_view verdict, std::optional<double> speedup) {
  if (verdict == "rejected") return kRewardRejected;
  if (verdict != "correct") return 0.0;
  if (!speedup || !std::isfinite(*speedup) || *speedup <= 0) return std::nullopt;
  return std::clamp(std::log(*speedup), kRewardMin, kRewardMax);
}

}  // namespace ok::score
