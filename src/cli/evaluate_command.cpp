// `openkernel evaluate`: one candidate against one reference, recorded in the store.
#include "cli/evaluate_command.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "eval/evaluator.hpp"
#include "eval/record.hpp"
#include "profile/profile.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"

namespace ok::cli {

using nlohmann::json;
using util::ErrorKind;
using util::fail;

namespace {

// The no-sandbox warning, printed before the evaluation as the CLI always has.
void warn_no_sandbox(const EvaluateOptions& o) {
  if (o.limits.no_sandbox)
    fmt::print(stderr,
               "WARNING: --no-sandbox: the candidate runs WITHOUT the sandbox. Its code can read "
               "your files and API keys, use the network and write wherever you can. Use it only "
               "for candidates you trust; the result is flagged no_sandbox.\n");
}

// The worker's request for this evaluation on `backend`.
eval::EvalRequest evaluation_request(const EvaluateOptions& o, const ResolvedProblem& prob,
                                     const std::string& backend, bool spare) {
  eval::EvalRequest req;
  req.reference = prob.path;
  req.candidate = std::filesystem::absolute(o.candidate).string();
  req.backend = backend;
  if (!o.device.empty()) req.device = o.device;
  req.limits = o.limits;
  req.limits.threads = threads_for(backend, o.limits.threads);
  if (o.seed >= 0) req.seed = o.seed;
  req.overrides = prob.overrides;
  req.strict = o.strict;
  req.cache_dir = util::cache_dir().string();
  req.cuda_graph = o.cuda_graph;
  req.rested = o.rested;
  req.compile_baseline = o.compile_baseline;
  req.profile = o.profile;
  req.spare = spare;
  return req;
}

// The one-off worker's environment: the request it will get, announced (OPENKERNEL_WORKER_EXPECT)
// so that it starts the candidate's process at once, before its own torch import
// (python/openkernel_worker/boot.py). Without --backend, the backend choose_backend will likely
// pick (a GPU's device node, not hidden by CUDA_VISIBLE_DEVICES); a wrong guess only costs the
// worker that process. None for a remote worker, which sees other paths.
std::map<std::string, std::string> announce(const EvaluateOptions& o, const ResolvedProblem& prob,
                                            const config::Config& cfg) {
  if (!o.eval_host.empty() || !cfg.eval_host.value_or("").empty()) return {};
  std::string backend = o.backend;
  if (backend.empty()) {
    auto visible = util::getenv_str("CUDA_VISIBLE_DEVICES");
    std::error_code ec;
    const bool gpu = std::filesystem::exists("/dev/nvidiactl", ec) &&
                     !(visible && (visible->empty() || *visible == "-1"));
    backend = gpu ? "cuda" : "cpu";
  }
  return {{"OPENKERNEL_WORKER_EXPECT", eval::to_json(evaluation_request(o, prob, backend, false))
                                           .dump(-1, ' ', false, json::error_handler_t::replace)}};
}

int run_evaluate(const GlobalOptions& g, const EvaluateOptions& o) {
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  auto prob = prepare_evaluation(o, *cfg);
  if (!prob) return report_error(prob.error());
  auto engine =
      start_engine(g, *cfg, o.python, o.backend, "cuda", o.eval_host, announce(o, *prob, *cfg));
  if (!engine) return report_error(engine.error());
  warn_no_sandbox(o);
  auto result = evaluate_recorded(*engine, o, *prob);
  if (!result) return report_error(result.error());
  if (o.json) {
    fmt::print("{}\n", result->dump());
  } else {
    fmt::print("{}  vs  {}\n", o.candidate, prob->path);
    fmt::print("{}", eval::format_report(*result));
  }
  return 0;
}

}  // namespace

util::Result<ResolvedProblem> prepare_evaluation(const EvaluateOptions& o,
                                                 const config::Config& cfg) {
  auto prob = resolve_problem(o.problem, cfg);
  if (!prob) return std::unexpected(prob.error());
  if (o.candidate.empty()) return fail(ErrorKind::kUsage, "--candidate PATH is required");
  if (!util::is_utf8(o.candidate))
    return fail(ErrorKind::kBadInput,
                "the candidate's path is not valid UTF-8 (paths travel to the evaluation "
                "worker as UTF-8 text): rename the file or its folder");
  if (auto c = util::read_file(o.candidate); !c) return std::unexpected(c.error());
  if (auto r = check_limits(o.limits); !r) return std::unexpected(r.error());
  return prob;
}

util::Result<json> evaluate_recorded(Engine& engine, const EvaluateOptions& o,
                                     const ResolvedProblem& prob,
                                     const EvaluationControl& control) {
  auto& [st, worker, backend] = engine;
  const eval::EvalRequest req = evaluation_request(o, prob, backend, control.spare);
  auto result = eval::evaluate(worker, req, control.cancel);
  if (!result && result.error().kind == ErrorKind::kRemoteLost) {
    // Never a verdict on the candidate: recorded as evaluator_error, flagged remote_lost.
    auto ids = eval::record_lost_evaluation(st, {prob.name, prob.path, prob.level, prob.number},
                                            o.candidate, req, result.error().message, std::nullopt);
    if (!ids) return std::unexpected(ids.error());
    return fail(ErrorKind::kRemoteLost,
                fmt::format("{} (recorded as evaluation {}: evaluator_error, remote_lost)",
                            result.error().message, ids->evaluation_id));
  }
  if (!result) return result;
  (*result)["versions"] = worker.hello()["versions"];
  auto ids = eval::record_evaluation(st, {prob.name, prob.path, prob.level, prob.number},
                                     o.candidate, *result, std::nullopt);
  (*result)["problem"].erase("source");  // in the store; too long for the report
  (*result)["candidate"].erase("source");
  if (!ids) return std::unexpected(ids.error());
  (*result)["evaluation_id"] = ids->evaluation_id;
  (*result)["db"] = st.path().string();
  return result;
}

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
  cmd->add_option("--profile", o->profile,
                  "Profiling tier for a correct candidate: basic (default), proton or deep "
                  "(Nsight Compute); docs/profiling.md")
      ->check(CLI::IsMember(
          std::vector<std::string>(std::begin(profile::kTiers), std::end(profile::kTiers))));
  cmd->add_flag("--json", o->json, "Print one JSON object");
  add_python_option(cmd, o->python);
  add_eval_host_option(cmd, o->eval_host);
  cmd->add_option("--db", g.db, "Store database (default: the user's data directory)");
  cmd->callback([&g, &action, o] { action = [&g, o] { return run_evaluate(g, *o); }; });
}

}  // namespace ok::cli
