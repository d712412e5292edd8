// The numbers behind the benchmark charts (`openkernel charts`, docs/charts.md, and the
// dashboard's Charts page): one JSON object per chart with its title, axes and series, computed
// from runs (a sweep's results TSV, or the sessions of a store) with the definitions of
// `openkernel score` (src/score: fast_p, geometric means), never re-derived here.
//
// chart_data's JSON (version 1) is the contract both renderers read: gnuplot (src/charts/gnuplot)
// and the dashboard's Plotly page. Pure functions over the Inputs; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "score/report.hpp"
#include "score/tsv.hpp"

namespace ok::charts {

// One attempt of a problem's session, in the session's order (from a store).
struct Attempt {
  int number = 0;
  std::string verdict;
  bool correct = false;
  std::optional<double> speedup;  // against eager, as the attempt's evaluation measured it
  std::optional<double> runtime_us;
  double cost_usd = 0;
  double wall_s = 0;
};

// One problem's result in a run: its results-TSV row, the device it ran on, and its attempts
// when a store recorded them (empty otherwise: the scaling and time charts then skip it).
struct Problem {
  score::Row row;
  std::string device;  // the device's name; "" when nothing recorded it
  std::vector<Attempt> attempts;
};

// One run: a sweep's TSV (label: the file's name) or a store's sessions (label: the store's).
struct Run {
  std::string label;
  std::string source;  // the file it was read from
  std::vector<Problem> problems;
};

struct Inputs {
  std::vector<Run> runs;
  std::vector<score::PublishedFigure> published;  // data/baselines/published.json
};

// The rows of a problem set as they stood after the first `k` attempts of each problem (the
// best correct attempt with a speedup so far, as a session picks its best; a problem whose session
// ended earlier keeps its final result). Problems without recorded attempts are left out. At k >=
// every problem's attempt count the rows agree with the runs' own rows wherever the store and the
// TSV agree.
std::vector<score::Row> rows_after(const std::vector<Problem>& problems, int k);

// The charts, in this order, each {id, title, kind, ...}; ids: fast_p_vs_published,
// speedup_distribution, scaling, cost_frontier, time_frontier, problem_heatmap, hardware.
// Kinds and their fields are documented in docs/charts.md ("chart_data").
nlohmann::json chart_data(const Inputs& in);

}  // namespace ok::charts
