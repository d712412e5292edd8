// Rendering scores (`openkernel score`) and comparisons with published results
// (`openkernel compare`) as JSON, Markdown and plain text. The published figures live in
// data/baselines/published.json; each keeps its system, hardware, problem set and source, and every
// rendering prints them beside the number. Stateless; thread-safe.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "score/metrics.hpp"
#include "score/tsv.hpp"
#include "util/error.hpp"

namespace ok::score {

// The JSON of docs/cli.md: n, correct, correct_rate, fast_p, geomean_speedup,
// geomean_speedup_fallback; plus `levels` when the rows span several levels and `ci`.
nlohmann::json score_json(const std::vector<Row>& rows, const BootstrapOptions& options = {});
std::string score_text(const std::vector<Row>& rows, const BootstrapOptions& options = {});

// fast_p for any p (compare needs p = 1.01, 1.1); nullopt when no row measured the baseline.
std::optional<double> fast_p(const std::vector<Row>& rows, Baseline b, double p);

struct PublishedFigure {
  std::string system, source, url, hardware, problems, notes;
  std::vector<int> levels;  // the source's levels; empty when unstated
  std::string metric;       // fast_p, correct_rate, geomean_speedup, mean_speedup, ...
  std::string p;            // for fast_p
  std::string baseline;     // eager / compile / empty
  bool baseline_assumed = false;
  std::optional<int> level;  // a figure for one level
  double value = 0;
  std::string bound;  // "below" when the source gives an upper bound ("< 0.20")
  std::string as_published;
};
util::Result<std::vector<PublishedFigure>> load_published(const std::filesystem::path& path);

struct Comparison {
  PublishedFigure published;
  std::optional<double> ours;
  int our_n = 0;                // our problems in the figure's levels
  std::vector<int> our_levels;  // the levels those problems come from
  std::string why_not;          // why `ours` is empty
};
std::vector<Comparison> compare(const std::vector<Row>& rows,
                                const std::vector<PublishedFigure>& published);

nlohmann::json compare_json(const std::vector<Comparison>& c, const std::string& our_hardware);
std::string compare_markdown(const std::vector<Comparison>& c, const std::string& our_hardware);
std::string compare_text(const std::vector<Comparison>& c, const std::string& our_hardware);

}  // namespace ok::score
