// `openkernel traces export`: the store's sessions as a training dataset directory (raw attempts,
// processed tables, metadata) in Parquet or JSON lines (docs/traces.md). Exit codes: 0; 2 bad
// usage (unknown --format, malformed --since), no store at the path, an unreadable or corrupt
// store, a store without attempts, filters that keep nothing, an --out that cannot be written or
// is not an earlier export; 1 internal error.
#include <fmt/core.h>

#include "cli/command.hpp"
#include "cli/context.hpp"
#include "traces/export.hpp"

namespace ok::cli {

namespace {

using util::ErrorKind;

struct TracesOptions {
  traces::ExportOptions ex;
  std::string out;
  std::optional<int> level;
  std::optional<double> min_speedup;
};

int run_export(const GlobalOptions& g, TracesOptions& o) {
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  std::filesystem::path path = store_path(g, *cfg);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return report_error(
        {ErrorKind::kBadInput, fmt::format("no store at {} (give --db PATH)", path.string())});
  auto st = store::Store::open(path);
  if (!st)
    return report_error({ErrorKind::kBadInput, fmt::format("cannot read the store {}: {}",
                                                           path.string(), st.error().message)});
  o.ex.out = o.out;
  o.ex.filters.level = o.level;
  o.ex.filters.min_speedup = o.min_speedup;
  o.ex.store_label = path.string();
  auto s = traces::export_traces(*st, o.ex);
  if (!s) return report_error(s.error());
  if (!g.quiet)
    fmt::print(
        "exported {} attempts of {} sessions to {} ({} filtered out, {} duplicates; {} "
        "training pairs, {} strategy rows, {} critic rows; {} files)\n",
        s->attempts, s->sessions, s->out.string(), s->filtered_out, s->duplicates,
        s->training_pairs, s->strategy_rows, s->critic_rows, s->files.size());
  return 0;
}

}  // namespace

void add_traces_command(CLI::App& app, GlobalOptions& g, Action& action) {
  auto* traces = app.add_subcommand("traces", "Training datasets from the store's sessions");
  traces->require_subcommand(1);
  auto o = std::make_shared<TracesOptions>();
  auto* cmd = traces->add_subcommand(
      "export", "Write the store's attempts as a dataset directory (docs/traces.md)");
  cmd->add_option("--out", o->out, "The dataset directory (replaced when it is an earlier export)")
      ->required();
  cmd->add_option("--format", o->ex.format, "parquet (default) or jsonl");
  cmd->add_option("--since", o->ex.filters.since,
                  "Sessions started on or after this day (YYYY-MM-DD)");
  cmd->add_option("--level", o->level, "Only problems of this KernelBench level");
  cmd->add_option("--backend", o->ex.filters.backend, "Only sessions on this backend");
  cmd->add_option("--model", o->ex.filters.model,
                  "Only sessions of this model (builtin for the "
                  "builtin generator)");
  cmd->add_flag("--correct-only", o->ex.filters.correct_only, "Only correct attempts");
  cmd->add_option("--min-speedup", o->min_speedup,
                  "Only attempts at least this much faster than eager");
  cmd->add_flag("--dedupe", o->ex.filters.dedupe,
                "One attempt per problem and normalised code hash (the first)");
  cmd->add_option("--db", g.db,
                  "Store database (default: $OPENKERNEL_DB, the config's, or the "
                  "default store)");
  cmd->add_flag("--quiet", g.quiet, "Print nothing on success");
  cmd->callback([&g, &action, o] { action = [&g, o] { return run_export(g, *o); }; });
}

}  // namespace ok::cli
