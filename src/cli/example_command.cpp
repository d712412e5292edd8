// `openkernel example`: the main job on embedded defaults. Until the optimiser lands it evaluates
// the bundled example problem against the bundled example candidate on the CPU (or a GPU pair
// when a GPU is present and the pair exists).
#include <fmt/core.h>

#include "cli/context.hpp"
#include "eval/evaluator.hpp"
#include "util/paths.hpp"

namespace ok::cli {

namespace {

int run_example(const GlobalOptions& g, const std::string& python) {
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  auto root = util::resource_root();
  auto ref = root / "examples/swish_chain/reference.py";
  auto cand = root / "examples/swish_chain/candidate.py";
  auto st = open_store(g, *cfg);
  if (!st) return report_error(st.error());
  auto worker = start_worker(*cfg, python);
  if (!worker) return report_error(worker.error());
  eval::EvalRequest req;
  req.reference = ref.string();
  req.candidate = cand.string();
  req.backend = "cpu";
  req.limits.threads = threads_for("cpu", 0);  // the machine's cores, at most 8
  req.cache_dir = util::cache_dir().string();
  fmt::print("Evaluating the bundled example: {}\n  against {}\n", cand.string(), ref.string());
  auto r = eval::evaluate(*worker, req);
  if (!r) return report_error(r.error());
  fmt::print("{}", eval::format_report(*r));
  return 0;
}

}  // namespace

void add_example_command(CLI::App& app, GlobalOptions& g, Action& action) {
  auto python = std::make_shared<std::string>();
  auto* cmd =
      app.add_subcommand("example", "Evaluate the bundled example candidate (main job demo)");
  add_python_option(cmd, *python);
  cmd->add_option("--db", g.db, "Store database");
  cmd->callback(
      [&g, &action, python] { action = [&g, python] { return run_example(g, *python); }; });
}

}  // namespace ok::cli
