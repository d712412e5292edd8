#include "score/metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>

namespace ok::score {

namespace {

double threshold(std::string_view p) {
  double v = 0;
  std::from_chars(p.data(), p.data() + p.size(), v);
  return v;
}

const std::optional<double>& speedup(const Row& r, Baseline b) {
  return b == Baseline::kEager ? r.speedup_eager : r.speedup_compile;
}

// Running sums from which one baseline's figures follow; filled per problem.
struct Sums {
  int n = 0;
  std::array<int, 5> fast{};
  int correct_with_speedup = 0;
  double log_correct = 0;   // sum of log speedup over correct problems with one
  double log_fallback = 0;  // the same over all problems, 0 (log 1) for the rest

  void add(const Row& r, Baseline b) {
    ++n;
    const auto& s = speedup(r, b);
    if (!r.correct || !s) return;
    for (size_t i = 0; i < kThresholds.size(); ++i)
      if (*s > threshold(kThresholds[i])) ++fast[i];
    ++correct_with_speedup;
    log_correct += std::log(*s);
    log_fallback += std::log(*s);
  }
  double fast_rate(size_t i) const { return n ? static_cast<double>(fast[i]) / n : 0; }
  std::optional<double> geomean() const {
    if (!correct_with_speedup) return std::nullopt;
    return std::exp(log_correct / correct_with_speedup);
  }
  double geomean_fallback() const { return n ? std::exp(log_fallback / n) : 1.0; }
};

bool has_flag(const Row& r, std::string_view flag) {
  std::string_view rest = r.flags;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    if (rest.substr(0, comma) == flag) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

bool measured(const std::vector<Row>& rows, Baseline b) {
  return std::ranges::any_of(rows, [b](const Row& r) { return speedup(r, b).has_value(); });
}

double percentile(std::vector<double>& v, double q) {
  std::ranges::sort(v);
  double pos = q * static_cast<double>(v.size() - 1);
  auto lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

std::optional<Interval> interval(std::vector<double>& v, double level) {
  if (v.empty()) return std::nullopt;
  double tail = (1 - level) / 2;
  Interval out;
  out.lo = percentile(v, tail);
  out.hi = percentile(v, 1 - tail);
  return out;
}

}  // namespace

std::optional<Interval> speedup_interval(const Row& r, Baseline b) {
  const auto& s = speedup(r, b);
  const auto& t_b = b == Baseline::kEager ? r.eager_us : r.compile_us;
  const auto& se_b = b == Baseline::kEager ? r.eager_stderr_us : r.compile_stderr_us;
  if (!r.correct || !s || !t_b || !se_b || !r.runtime_us || !r.runtime_stderr_us)
    return std::nullopt;
  if (*t_b <= 0 || *r.runtime_us <= 0) return std::nullopt;
  const double z = 1.959963984540054;  // the normal distribution's 97.5th percentile
  double rel = std::hypot(*se_b / *t_b, *r.runtime_stderr_us / *r.runtime_us);
  return Interval{*s * std::exp(-z * rel), *s * std::exp(z * rel)};
}

bool significant_win(const Row& r, Baseline b, double p) {
  if (has_flag(r, "torch_ops_in_forward")) return false;
  auto i = speedup_interval(r, b);
  return i && i->lo > p;
}

std::string_view baseline_name(Baseline b) {
  return b == Baseline::kEager ? "eager" : "compile";
}

Metrics compute(const std::vector<Row>& rows) {
  Metrics m;
  m.n = static_cast<int>(rows.size());
  m.correct = static_cast<int>(std::ranges::count_if(rows, [](const Row& r) { return r.correct; }));
  m.correct_rate = m.n ? static_cast<double>(m.correct) / m.n : 0;
  for (Baseline b : kBaselines) {
    if (!measured(rows, b)) continue;
    Sums s;
    for (const auto& r : rows) s.add(r, b);
    auto& out = b == Baseline::kEager ? m.eager : m.compile;
    out.fast_p.emplace();
    for (size_t i = 0; i < kThresholds.size(); ++i) (*out.fast_p)[i] = s.fast_rate(i);
    out.geomean_speedup = s.geomean();
    out.geomean_speedup_fallback = s.geomean_fallback();
    if (std::ranges::none_of(rows,
                             [b](const Row& r) { return speedup_interval(r, b).has_value(); }))
      continue;
    out.fast_p_significant.emplace();
    for (size_t i = 0; i < kThresholds.size(); ++i) {
      auto wins = std::ranges::count_if(
          rows, [&](const Row& r) { return significant_win(r, b, threshold(kThresholds[i])); });
      (*out.fast_p_significant)[i] = m.n ? static_cast<double>(wins) / m.n : 0;
    }
  }
  return m;
}

Confidence bootstrap(const std::vector<Row>& rows, const BootstrapOptions& options) {
  Confidence c;
  c.options = options;
  if (rows.empty() || options.resamples <= 0) return c;
  const size_t fast_1 = 1;  // kThresholds[1] == "1.0"
  for (Baseline b : kBaselines) {
    if (!measured(rows, b)) continue;
    // The same seed for both baselines: each resample draws the same problems for both.
    std::mt19937_64 rng(options.seed);
    std::vector<double> fast, geo, fallback;
    for (int k = 0; k < options.resamples; ++k) {
      Sums s;
      for (size_t i = 0; i < rows.size(); ++i) s.add(rows[rng() % rows.size()], b);
      fast.push_back(s.fast_rate(fast_1));
      if (auto g = s.geomean()) geo.push_back(*g);
      fallback.push_back(s.geomean_fallback());
    }
    auto& out = b == Baseline::kEager ? c.eager : c.compile;
    out.fast_1 = interval(fast, options.level);
    out.geomean_speedup = interval(geo, options.level);
    out.geomean_speedup_fallback = interval(fallback, options.level);
  }
  return c;
}

std::map<int, std::vector<Row>> by_level(const std::vector<Row>& rows) {
  std::map<int, std::vector<Row>> out;
  for (const auto& r : rows) out[r.level].push_back(r);
  return out;
}

}  // namespace ok::score
