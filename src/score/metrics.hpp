// KernelBench's metrics over a results TSV (docs/tsv.md, docs/cli.md "openkernel score").
//
// fast_p = (problems that are correct AND speedup > p) / ALL problems; a missing speedup is not
// fast. geomean_speedup: geometric mean over correct problems with a speedup (nullopt if none).
// geomean_speedup_fallback: over all problems, counting an incorrect problem or a missing speedup
// as 1.0 (the user keeps PyTorch). A baseline that no row measured (speedup column empty in every
// row) gives nullopt for all its figures rather than zeros.
// fast_p_significant counts only honest, measured wins: correct, without the flag
// torch_ops_in_forward (the reference's heavy PyTorch op kept), and with the speedup's 95%
// interval (speedup_interval) above p; nullopt when no row has the standard errors that interval
// needs (files written before the stderr columns). Pure functions; thread-safe.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "score/tsv.hpp"

namespace ok::score {

inline constexpr std::array<std::string_view, 5> kThresholds = {"0.0", "1.0", "1.2", "1.5", "2.0"};
enum class Baseline { kEager, kCompile };
inline constexpr std::array<Baseline, 2> kBaselines = {Baseline::kEager, Baseline::kCompile};
std::string_view baseline_name(Baseline b);  // "eager" / "compile"

struct BaselineMetrics {
  std::optional<std::array<double, 5>> fast_p;  // indexed like kThresholds
  std::optional<std::array<double, 5>> fast_p_significant;
  std::optional<double> geomean_speedup;
  std::optional<double> geomean_speedup_fallback;
};

struct Metrics {
  int n = 0;
  int correct = 0;
  double correct_rate = 0;
  BaselineMetrics eager, compile;
  const BaselineMetrics& of(Baseline b) const { return b == Baseline::kEager ? eager : compile; }
};

Metrics compute(const std::vector<Row>& rows);

struct Interval {
  double lo = 0, hi = 0;
};

// The 95% interval of a row's speedup over baseline b, from the standard errors of the two
// median times (delta method on the log ratio): s * exp(+-1.96 * sqrt((se_b/t_b)^2 +
// (se_r/t_r)^2)). nullopt when the row is not correct or lacks the speedup, a time or a standard
// error.
std::optional<Interval> speedup_interval(const Row& r, Baseline b);
// An honest win at threshold p: correct, no torch_ops_in_forward flag, interval above p.
bool significant_win(const Row& r, Baseline b, double p);
// Percentile bootstrap over problems (resampled with replacement), deterministic for a seed.
struct BootstrapOptions {
  int resamples = 2000;
  unsigned long long seed = 20250214;
  double level = 0.95;
};
struct BaselineCi {
  std::optional<Interval> fast_1;  // fast_p at p = 1.0
  std::optional<Interval> geomean_speedup;
  std::optional<Interval> geomean_speedup_fallback;
};
struct Confidence {
  BootstrapOptions options;
  BaselineCi eager, compile;
  const BaselineCi& of(Baseline b) const { return b == Baseline::kEager ? eager : compile; }
};
Confidence bootstrap(const std::vector<Row>& rows, const BootstrapOptions& options = {});

// Rows split by level, ascending.
std::map<int, std::vector<Row>> by_level(const std::vector<Row>& rows);

}  // namespace ok::score
