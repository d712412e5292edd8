// `openkernel evaluate`: one candidate against one reference, recorded in the store.
#include <fmt/core.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "eval/evaluator.hpp"
#include "eval/record.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"

namespace ok::cli {

using nlohmann::json;
using util::ErrorKind;
using util::fail;

namespace {

struct EvaluateOptions {
  ProblemOptions problem;
  std::string candidate;
  std::string backend;
  std::string device;
  eval::Limits limits;
  long long seed = -1;
  bool strict = false;
  std::string cuda_graph = "auto";
  std::string rested = "auto";
  bool compile_baseline = false;
  bool json = false;
  std::string python;
};

int run_evaluate(const GlobalOptions& g, const EvaluateOptions& o) {
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  auto prob = resolve_problem(o.problem, *cfg);
  if (!prob) return report_error(prob.error());
  if (o.candidate.empty()) return report_error({ErrorKind::kUsage, "--candidate PATH is required"});
  if (!util::is_utf8(o.candidate))
    return report_error({ErrorKind::kBadInput,
                         "the candidate's path is not valid UTF-8 (paths travel to the evaluation "
                         "worker as UTF-8 text): rename the file or its folder"});
  if (auto c = util::read_file(o.candidate); !c) return report_error(c.error());
  if (auto r = check_limits(o.limits); !r) return report_error(r.error());
  auto engine = start_engine(g, *cfg, o.python, o.backend, "cuda");
  if (!engine) return report_error(engine.error());
  auto& [st, worker, backend] = *engine;
  eval::EvalRequest req;
  req.reference = prob->path;
  req.candidate = std::filesystem::absolute(o.candidate).string();
  req.backend = backend;
  if (!o.device.empty()) req.device = o.device;
  req.limits = o.limits;
  req.limits.threads = threads_for(backend, o.limits.threads);
  if (o.seed >= 0) req.seed = o.seed;
  req.overrides = prob->overrides;
  req.strict = o.strict;
  req.cache_dir = util::cache_dir().string();
  req.cuda_graph = o.cuda_graph;
  req.rested = o.rested;
  req.compile_baseline = o.compile_baseline;
  if (o.limits.no_sandbox)
    fmt::print(stderr,
               "WARNING: --no-sandbox: the candidate runs WITHOUT the sandbox. Its code can read "
               "your files and API keys, use the network and write wherever you can. Use it only "
               "for candidates you trust; the result is flagged no_sandbox.\n");
  auto result = eval::evaluate(worker, req);
  if (!result) return report_error(result.error());
  (*result)["versions"] = worker.hello()["versions"];
  auto ids = eval::record_evaluation(st, {prob->name, prob->path, prob->level, prob->number},
                                     o.candidate, *result, std::nullopt);
  (*result)["problem"].erase("source");  // in the store; too long for the report
  (*result)["candidate"].erase("source");
  if (!ids) return report_error(ids.error());
  (*result)["evaluation_id"] = ids->evaluation_id;
  (*result)["db"] = st.path().string();
  if (o.json) {
    fmt::print("{}\n", result->dump());
  } else {
    fmt::print("{}  vs  {}\n", o.candidate, prob->path);
    fmt::print("{}", eval::format_report(*result));
  }
  return 0;
}

}  // namespace

void add_evaluate_command(CLI::App& app, GlobalOptions& g, Action& action) {
  auto o = std::make_shared<EvaluateOptions>();
  auto* cmd = app.add_subcommand("evaluate", "Check and time one candidate against a reference");
  add_problem_options(cmd, o->problem);
  cmd->add_option("--candidate", o->candidate, "Candidate file defining ModelNew")->required();
  add_backend_option(cmd, o->backend, "cpu, cuda or triton (default: cuda with a GPU, else cpu)");
  cmd->add_option("--device", o->device, "Device, e.g. cuda:0 (default: cuda:0, or cpu)");
  add_limit_options(cmd, o->limits);
  cmd->add_option("--seed", o->seed, "Seed for the trials (default: a secret random seed)");
  cmd->add_flag("--strict", o->strict, "Reject a candidate on any flag");
  add_timing_mode_options(cmd, o->cuda_graph, o->rested);
  cmd->add_flag("--compile-baseline", o->compile_baseline,
                "Also time torch.compile(reference) and report speedup_compile");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  add_python_option(cmd, o->python);
  cmd->add_option("--db", g.db, "Store database (default: the user's data directory)");
  cmd->callback([&g, &action, o] { action = [&g, o] { return run_evaluate(g, *o); }; });
}

}  // namespace ok::cli
