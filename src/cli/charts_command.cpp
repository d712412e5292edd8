// `openkernel charts RESULTS.tsv... --out DIR`: the benchmark charts (docs/charts.md) of sweeps'
// results TSVs and stores, as PNG and SVG through gnuplot, with the numbers behind them in
// DIR/chart_data.json.
#include <fmt/core.h>

#include "charts/data.hpp"
#include "charts/gnuplot.hpp"
#include "charts/inputs.hpp"
#include "cli/command.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"

namespace ok::cli {

namespace {

struct ChartsOptions {
  std::vector<std::string> tsvs, dbs;
  std::string out;
  std::string formats = "png,svg";
  std::string baselines;  // empty: data/baselines/published.json
  std::string hardware;
  std::string gnuplot = "gnuplot";
};

int run_charts(const ChartsOptions& o) {
  if (o.tsvs.empty() && o.dbs.empty())
    return report_error({util::ErrorKind::kUsage, "charts needs a results TSV or a --db store"});
  charts::RenderOptions render{.formats = {}, .gnuplot = o.gnuplot};
  for (const auto& f : util::split(o.formats, ','))
    if (auto t = util::trim(f); !t.empty()) render.formats.push_back(t);
  if (render.formats.empty())
    return report_error({util::ErrorKind::kUsage, "--format names no format (use png, svg)"});
  charts::Sources sources{.hardware = o.hardware};
  sources.tsvs.assign(o.tsvs.begin(), o.tsvs.end());
  sources.dbs.assign(o.dbs.begin(), o.dbs.end());
  sources.baselines = o.baselines.empty() ? util::resource_root() / "data/baselines/published.json"
                                          : std::filesystem::path(o.baselines);
  if (auto ok = charts::check_renderer(render); !ok) return report_error(ok.error());
  auto in = charts::load_inputs(sources);
  if (!in) return report_error(in.error());
  auto data = charts::chart_data(*in);
  std::filesystem::path out(o.out);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (auto w = util::write_file(out / "chart_data.json", data.dump(2) + "\n"); !w)
    return report_error(w.error());
  auto files = charts::render(data, out, render);
  if (!files) return report_error(files.error());
  fmt::print("{}\n", (out / "chart_data.json").string());
  for (const auto& f : *files) fmt::print("{}\n", f.string());
  return 0;
}

}  // namespace

void add_charts_command(CLI::App& app, GlobalOptions&, Action& action) {
  auto o = std::make_shared<ChartsOptions>();
  auto* cmd = app.add_subcommand(
      "charts", "Benchmark charts (PNG, SVG) of results TSVs and stores, through gnuplot");
  cmd->add_option("files", o->tsvs, "Results TSVs (docs/tsv.md), one run each");
  cmd->add_option("--out", o->out, "Folder for the charts, their data and gnuplot scripts")
      ->required();
  cmd->add_option("--format", o->formats, "Comma-separated formats: png, svg (default both)");
  cmd->add_option("--db", o->dbs,
                  "A store with the runs' sessions (per-attempt data, devices); repeatable");
  cmd->add_option("--baselines", o->baselines,
                  "Published figures (default data/baselines/published.json)");
  cmd->add_option("--hardware", o->hardware,
                  "The device of results that recorded no device name (e.g. \"NVIDIA H200\")");
  cmd->add_option("--gnuplot", o->gnuplot, "The gnuplot program (default: gnuplot on PATH)");
  cmd->callback([&action, o] { action = [o] { return run_charts(*o); }; });
}

}  // namespace ok::cli
