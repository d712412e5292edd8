// The training reward of one evaluated attempt: the one definition that the trace export
// (`openkernel traces export`), the Python API's reward helper and anything else that scores
// attempts for learning share, so a reward means the same wherever it was computed.
//
//   verdict `rejected` (a rejecting flag fired: a cheat or a lie)        -> -1
//   any other verdict that is not `correct`, or no verdict at all        ->  0
//   `correct` with a speedup s over the baseline                         ->  clip(ln s, -1, 3)
//   `correct` without a speedup (the baseline was not timed)             ->  nullopt
//
// The baseline is eager PyTorch for the default reward and torch.compile for the second column;
// the caller passes the matching speedup. A non-finite or non-positive speedup is treated as
// missing. Pure function; thread-safe.
#pragma once

#include <optional>
#include <string_view>

namespace ok::score {

inline constexpr double kRewardRejected = -1.0;
inline constexpr double kRewardMin = -1.0;  // ln(1/e): e times slower than the baseline
inline constexpr double kRewardMax = 3.0;   // ln(e^3) ~ 20x faster than the baseline

std::optional<double> reward(std::string_view verdict, std::optional<double> speedup);

}  // namespace ok::score
