// Draws chart_data's charts (src/charts/data.hpp) with gnuplot: for each chart a script and its
// data files under DIR/gnuplot/ (kept, so a chart can be restyled for a paper by editing them),
// then DIR/<id>.png (pngcairo) and DIR/<id>.svg (svg), one gnuplot process per chart.
//
// No browser and nothing fetched: gnuplot with cairo is a Debian package (gnuplot-nox). Text is
// drawn with `noenhanced`, so names such as fast_1.0 print as written. Not thread-safe for one
// DIR; distinct DIRs are independent.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace ok::charts {

inline constexpr const char* kFormats[] = {"png", "svg"};

struct RenderOptions {
  std::vector<std::string> formats = {"png", "svg"};  // each one of kFormats
  std::string gnuplot = "gnuplot";                    // the program, found on PATH
};

// Checks the formats (kUsage: "unknown format") and that gnuplot runs and has their terminals
// (kEnvironment, naming the Debian package gnuplot-nox), before anything is computed or written.
util::Result<void> check_renderer(const RenderOptions& options);

// The gnuplot script drawing `chart` into `out_stem`.<format> for every format, reading the data
// files it names under `data_dir` (which write_chart_data creates).
std::string gnuplot_script(const nlohmann::json& chart, const std::filesystem::path& data_dir,
                           const std::filesystem::path& out_stem,
                           const std::vector<std::string>& formats);

// Renders every chart of `data` (chart_data's JSON) into `out`; returns the files written.
// Errors: those of check_renderer, kInternal when gnuplot fails on a script (its message
// quoted), kBadInput when `out` cannot be written.
util::Result<std::vector<std::filesystem::path>> render(const nlohmann::json& data,
                                                        const std::filesystem::path& out,
                                                        const RenderOptions& options = {});

}  // namespace ok::charts
