// `openkernel score FILE` and `openkernel compare FILE`: KernelBench metrics of a results TSV
// (docs/tsv.md), and the same beside published results (data/baselines/published.json).
#include <fmt/core.h>

#include "cli/command.hpp"
#include "score/report.hpp"
#include "util/paths.hpp"

namespace ok::cli {

namespace {

struct ScoreOptions {
  std::string file;
  bool json = false;
  bool markdown = false;
  std::string baselines;  // empty: data/baselines/published.json
  std::string hardware = "this run";
};

int run_score(const ScoreOptions& o) {
  auto rows = score::read_tsv(o.file);
  if (!rows) return report_error(rows.error());
  if (o.json)
    fmt::print("{}\n", score::score_json(*rows).dump(2));
  else
    fmt::print("{}: {}", o.file, score::score_text(*rows));
  return 0;
}

int run_compare(const ScoreOptions& o) {
  if (o.json && o.markdown)
    return report_error({util::ErrorKind::kUsage, "compare takes --json or --markdown, not both"});
  auto rows = score::read_tsv(o.file);
  if (!rows) return report_error(rows.error());
  auto path = o.baselines.empty() ? util::resource_root() / "data/baselines/published.json"
                                  : std::filesystem::path(o.baselines);
  auto published = score::load_published(path);
  if (!published) return report_error(published.error());
  auto c = score::compare(*rows, *published);
  if (o.json) {
    auto j = score::compare_json(c, o.hardware);
    j["ours"] = score::score_json(*rows);
    j["ours"]["file"] = o.file;
    j["baselines_file"] = path.string();
    fmt::print("{}\n", j.dump(2));
  } else if (o.markdown) {
    fmt::print("{}", score::compare_markdown(c, o.hardware));
  } else {
    fmt::print("{}", score::compare_text(c, o.hardware));
  }
  return 0;
}

}  // namespace

void add_score_commands(CLI::App& app, GlobalOptions&, Action& action) {
  auto o = std::make_shared<ScoreOptions>();
  auto* score =
      app.add_subcommand("score", "KernelBench metrics (fast_p, geomean) of a results TSV");
  score->add_option("file", o->file, "Results TSV (docs/tsv.md)")->required();
  score->add_flag("--json", o->json, "Print JSON");
  score->callback([&action, o] { action = [o] { return run_score(*o); }; });
  auto* compare = app.add_subcommand("compare", "A results TSV's scores beside published results");
  compare->add_option("file", o->file, "Results TSV (docs/tsv.md)")->required();
  compare->add_flag("--json", o->json, "Print JSON");
  compare->add_flag("--markdown", o->markdown, "Print a Markdown table");
  compare->add_option("--hardware", o->hardware, "What our results ran on, printed beside them");
  compare->add_option("--baselines", o->baselines,
                      "Published figures (default data/baselines/published.json)");
  compare->callback([&action, o] { action = [o] { return run_compare(*o); }; });
}

}  // namespace ok::cli
