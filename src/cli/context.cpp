#include "cli/context.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <thread>

#include "optimize/prompt_budget.hpp"
#include "problems/kernelbench.hpp"
#include "remote/ssh_worker.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"

namespace ok::cli {

using util::ErrorKind;
using util::fail;

void add_problem_options(CLI::App* cmd, ProblemOptions& p) {
  cmd->add_option("--reference", p.reference, "Reference program (KernelBench format)");
  cmd->add_option("--level", p.level, "KernelBench level (with --problem)");
  cmd->add_option("--problem", p.problem, "KernelBench problem number (with --level)");
  cmd->add_option("--kernelbench-dir", p.kernelbench_dir, "KernelBench directory");
  cmd->add_option("--set", p.sets, "Override a module-level constant of the reference: NAME=VALUE")
      ->type_name("NAME=VALUE");
}

util::Result<std::map<std::string, std::string>> parse_sets(const std::vector<std::string>& sets) {
  std::map<std::string, std::string> out;
  for (const auto& s : sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail(ErrorKind::kUsage, fmt::format("--set expects NAME=VALUE, got '{}'", s));
    out[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return out;
}

util::Result<ResolvedProblem> resolve_problem(const ProblemOptions& p, const config::Config& cfg) {
  ResolvedProblem r;
  auto sets = parse_sets(p.sets);
  if (!sets) return std::unexpected(sets.error());
  r.overrides = *sets;
  bool by_number = p.level != 0 || p.problem != 0;
  if (!p.reference.empty() && by_number)
    return fail(ErrorKind::kUsage, "give either --reference or --level/--problem, not both");
  if (!p.reference.empty()) {
    if (!util::is_utf8(p.reference))
      return fail(ErrorKind::kBadInput,
                  "the reference's path is not valid UTF-8 (paths travel to the evaluation "
                  "worker as UTF-8 text): rename the file or its folder");
    std::error_code ec;
    if (!std::filesystem::exists(p.reference, ec))
      return fail(ErrorKind::kBadInput, "reference not found: " + p.reference);
    if (auto rd = util::read_file(p.reference); !rd) return std::unexpected(rd.error());
    r.path = std::filesystem::absolute(p.reference).string();
    r.name = std::filesystem::path(p.reference).stem().string();
    return r;
  }
  if (p.level == 0 || p.problem == 0)
    return fail(ErrorKind::kUsage, "name a problem: --reference PATH, or --level L --problem N");
  auto dir = kernelbench_dir(p.kernelbench_dir, cfg);
  if (!dir) return std::unexpected(dir.error());
  auto found = problems::find_problem(*dir, p.level, p.problem);
  if (!found) return std::unexpected(found.error());
  r.path = found->path.string();
  r.name = found->name;
  r.level = found->level;
  r.number = found->number;
  return r;
}

void add_limit_options(CLI::App* cmd, eval::Limits& limits, LimitFlags which) {
  const eval::Limits d;
  auto with_default = [](std::string_view help, auto value) {
    return fmt::format("{} (default {})", help, value);
  };
  if (which.trials)
    cmd->add_option(
        "--trials", limits.trials,
        with_default("Correctness trials per candidate, each with fresh inputs", d.trials));
  if (which.timeout)
    cmd->add_option("--timeout", limits.timeout_s,
                    with_default("Limit in seconds for each candidate step: its build, one trial, "
                                 "one timed block",
                                 d.timeout_s));
  if (which.timing_budget)
    cmd->add_option("--timing-budget", limits.timing_budget_s,
                    with_default("Seconds of timing per candidate before stopping short of the "
                                 "target precision",
                                 d.timing_budget_s));
  if (which.threads)
    cmd->add_option("--threads", limits.threads,
                    "CPU threads for reference and candidate (default: on the CPU backend the "
                    "machine's cores, at most 8)");
  if (which.no_sandbox)
    cmd->add_flag("--no-sandbox", limits.no_sandbox,
                  "Run candidates without the bwrap sandbox (dangerous: only for trusted code; "
                  "needed where bwrap cannot run; see docs/evaluation.md)");
}

void add_python_option(CLI::App* cmd, std::string& python) {
  cmd->add_option("--python", python, "Python interpreter with torch for the evaluation worker");
}

void add_eval_host_option(CLI::App* cmd, std::string& eval_host) {
  cmd->add_option(
         "--eval-host", eval_host,
         "Evaluate on this host over ssh, ssh://[user@]host[:port], or in a SLURM allocation, "
         "slurm[:SRUN-ARGS] (default: the config's "
         "eval_host, else this machine; docs/remote.md)")
      ->type_name("URL");
}

void add_backend_option(CLI::App* cmd, std::string& backend, const std::string& help) {
  cmd->add_option("--backend", backend, help)->check(CLI::IsMember({"cpu", "cuda", "triton"}));
}

void add_timing_mode_options(CLI::App* cmd, std::string& cuda_graph, std::string& rested) {
  const auto modes = CLI::IsMember({"auto", "on", "off"});
  cmd->add_option("--cuda-graph", cuda_graph,
                  "Time by CUDA-graph replay: auto (when the eager median is below 50 us), on, "
                  "off (default auto)")
      ->check(modes);
  cmd->add_option("--rested", rested,
                  "Rested timing on CUDA: before each timed call an idle gap as long as the "
                  "reference's call, so power-limited kernels are not timed throttled: auto (when "
                  "the reference's median is 100 us or more), on, off (default auto)")
      ->check(modes);
}

util::Result<Engine> start_engine(const GlobalOptions& g, const config::Config& cfg,
                                  const std::string& python_flag, const std::string& requested,
                                  const std::string& gpu_default, const std::string& eval_host,
                                  const std::map<std::string, std::string>& worker_env) {
  auto st = open_store(g, cfg);
  if (!st) return std::unexpected(st.error());
  auto worker = start_worker(cfg, python_flag, worker_env, eval_host);
  if (!worker) return std::unexpected(worker.error());
  auto backend = choose_backend(*worker, requested, gpu_default);
  if (!backend) return std::unexpected(backend.error());
  return Engine{std::move(*st), std::move(*worker), *backend};
}

util::Result<void> check_limits(const eval::Limits& limits) {
  if (limits.trials < 1) return util::fail(util::ErrorKind::kUsage, "--trials must be at least 1");
  if (!(limits.timeout_s > 0))
    return util::fail(util::ErrorKind::kUsage, "--timeout must be positive");
  return {};
}

util::Result<void> check_prompt_budget_tokens(int tokens) {
  if (tokens != 0 && tokens < optimize::kMinPromptBudgetTokens)
    return util::fail(util::ErrorKind::kUsage,
                      fmt::format("--prompt-budget-tokens must be at least {}",
                                  optimize::kMinPromptBudgetTokens));
  return {};
}

util::Result<std::filesystem::path> kernelbench_dir(const std::string& flag,
                                                    const config::Config& cfg) {
  return problems::kernelbench_dir(flag.empty() ? std::nullopt : std::optional(flag),
                                   cfg.kernelbench_dir);
}

util::Result<eval::Worker> start_worker(const config::Config& cfg, const std::string& python_flag,
                                        const std::map<std::string, std::string>& env,
                                        const std::string& eval_host,
                                        const std::atomic<bool>* cancel) {
  const std::string host = !eval_host.empty() ? eval_host : cfg.eval_host.value_or("");
  if (!host.empty()) {
    auto parsed = remote::parse_eval_host(host);
    if (!parsed) return std::unexpected(parsed.error());
    remote::RemoteWorkerOptions so;
    so.host = *parsed;
    if (!python_flag.empty()) so.python = python_flag;
    so.resource_root = util::resource_root();
    so.env_set = env;
    so.cancel = cancel;
    const bool slurm = so.host.kind == remote::EvalHost::Kind::kSlurm;
    // A sweep slot's GPU (--gpus) chooses an ssh host's GPU, as it chooses a local one; in a SLURM
    // allocation SLURM chooses (what it set for the step is left alone).
    if (auto gpus = util::getenv_str("CUDA_VISIBLE_DEVICES");
        gpus && !slurm && !env.contains("CUDA_VISIBLE_DEVICES"))
      so.env_set["CUDA_VISIBLE_DEVICES"] = *gpus;
    // A worker that is to see no GPU (the build worker) asks SLURM for none either.
    if (slurm && env.contains("CUDA_VISIBLE_DEVICES") && env.at("CUDA_VISIBLE_DEVICES").empty())
      so.host.srun_args = remote::without_gpu_requests(so.host.srun_args);
    return remote::start_remote_worker(so);
  }
  std::optional<std::string> configured;
  if (!python_flag.empty())
    configured = python_flag;
  else if (auto env = util::getenv_str("OPENKERNEL_PYTHON"))
    configured = env;
  else
    configured = cfg.python;
  eval::WorkerOptions wo;
  wo.pythons = eval::python_candidates(configured);
  wo.resource_root = util::resource_root();
  wo.env_set = env;
  wo.cancel = cancel;
  return eval::Worker::start(wo);
}

std::filesystem::path store_path(const GlobalOptions& g, const config::Config& cfg) {
  if (!g.db.empty()) return g.db;
  if (auto env = util::getenv_str("OPENKERNEL_DB")) return *env;
  if (cfg.db) return *cfg.db;
  return store::Store::default_path();
}

util::Result<store::Store> open_store(const GlobalOptions& g, const config::Config& cfg) {
  return store::Store::open(store_path(g, cfg));
}

util::Result<std::string> choose_backend(const eval::Worker& worker, const std::string& requested,
                                         const std::string& gpu_default) {
  const bool gpu = worker.hello().value("cuda_available", false);
  std::string backend = requested.empty() ? (gpu ? gpu_default : "cpu") : requested;
  if (backend != "cpu" && !gpu)
    return util::fail(util::ErrorKind::kEnvironment,
                      fmt::format("--backend {} needs an NVIDIA GPU, but the worker's torch ({}) "
                                  "sees none on this machine; use --backend cpu",
                                  backend, worker.hello().value("python_executable", "?")));
  return backend;
}

int threads_for(const std::string& backend, int requested) {
  if (requested > 0) return requested;
  if (backend != "cpu") return 0;
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

}  // namespace ok::cli
