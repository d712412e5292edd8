// `openkernel sweep`: optimize every selected KernelBench problem of a level, locally (one slot per
// GPU) or as a SLURM job array, into a results TSV (docs/tsv.md) that `score` and `compare` read.
// `openkernel baseline`: the reference's eager and torch.compile times per problem on this device,
// stored so later sweeps and reports compare within one machine. docs/sweep.md has the details.
//
// Exit codes (sweep): 0 every selected problem has a finished run; 1 some runs failed (their rows
// say verdict `error`; re-running the command retries them); 2 bad usage or input; 130 interrupted
// (re-run the same command to continue). Baseline: 0 all measured, 1 some failed, 2 bad usage.
#include "cli/sweep_command.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "problems/kernelbench.hpp"
#include "remote/host.hpp"
#include "score/report.hpp"
#include "sweep/baseline.hpp"
#include "sweep/sweep.hpp"
#include "util/cancel.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"

namespace ok::cli {

using nlohmann::json;
using util::ErrorKind;

namespace {

constexpr int kInterrupted = 130;

std::string duration(double s) {
  if (s < 0) return "?";
  int t = static_cast<int>(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, t / 60 % 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

// "[#####.........] 12/40": problems finished (done before included) over the selection.
std::string bar(int done, int total) {
  constexpr int kWidth = 20;
  int filled = total > 0 ? done * kWidth / total : 0;
  return fmt::format("[{}{}] {:>3}/{}", std::string(filled, '#'), std::string(kWidth - filled, '.'),
                     done, total);
}

sweep::Observer sweep_progress(bool quiet) {
  return [quiet](const sweep::Progress& p) {
    if (quiet && p.kind != "warning" && p.kind != "failed") return;
    std::string where =
        p.task ? fmt::format("L{}/{} {}", p.task->level, p.task->number, p.task->name) : "";
    std::string tail = fmt::format("fast_1 {}/{}  ETA {}", p.fast_1, p.scored, duration(p.eta_s));
    if (p.kind == "planned") {
      fmt::print(stderr, "sweep  {}\n", p.text);
    } else if (p.kind == "started") {
      fmt::print(stderr, "{} start  {}  ({}session {})\n", bar(p.done, p.total), where,
                 p.slot.empty() ? "" : "gpu " + p.slot + ", ", p.text);
    } else if (p.kind == "finished" && p.row) {
      const auto& r = *p.row;
      std::string what = r.correct && r.speedup_eager
                             ? fmt::format("correct {:.3f}x", *r.speedup_eager)
                             : r.verdict;
      fmt::print(stderr, "{} done   {}  {}  ({})  {}\n", bar(p.done, p.total), where, what,
                 p.wall_s > 0 ? duration(p.wall_s) : "-", tail);
    } else if (p.kind == "failed") {
      fmt::print(stderr, "{} FAILED {}  {}  {}\n", bar(p.done, p.total), where, p.text, tail);
    } else if (p.kind == "stopped") {
      fmt::print(stderr, "sweep  {} {}\n", where, p.text);
    } else if (p.kind == "warning") {
      fmt::print(stderr, "openkernel: warning: {} {}\n", where, p.text);
    }
    std::fflush(stderr);
  };
}

// A model id as a file name ("org/model:tag" -> "org_model_tag").
std::string safe_name(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.' && ch != '_')
      ch = '_';
  return s;
}

// The backend, decided once for the whole sweep (every row must share it). Under SLURM the GPUs
// are on the compute nodes, not here: no local check, and a GPU backend by default.
util::Result<std::string> sweep_backend(const SweepCliOptions& c, const config::Config& cfg) {
  if (c.executor == "slurm") return c.backend.empty() ? std::string("triton") : c.backend;
  if (c.backend == "cpu") return c.backend;
  auto worker = start_worker(cfg, c.python, {}, c.eval_hosts.empty() ? "" : c.eval_hosts.front());
  if (!worker) return std::unexpected(worker.error());
  return choose_backend(*worker, c.backend, "triton");
}

// Prints the sweep's summary (or, with --json, one JSON line with the score) and returns the exit
// code: 130 interrupted, 1 when a problem failed, else 0.
int print_summary(const SweepDone& done, bool as_json) {
  const sweep::Options& o = done.options;
  const sweep::Outcome& out = done.outcome;
  if (as_json) {
    fmt::print("{}\n", sweep_summary_json(done).dump());
  } else {
    fmt::print("Results: {} ({} rows; {} ran now, {} done before, {} failed, {})\n",
               o.output.string(), out.rows.size(), out.ran, out.skipped, out.failed,
               duration(done.wall_s));
    if (!out.rows.empty()) fmt::print("{}", score::score_text(out.rows));
  }
  if (out.interrupted) {
    fmt::print(stderr, "interrupted: re-run the same command to continue where it stopped\n");
    return kInterrupted;
  }
  return out.failed > 0 ? 1 : 0;
}

// The flags' checks and the sweep's options, but the backend and the executable.
util::Result<sweep::Options> sweep_options(const SweepCliOptions& c, const config::Config& cfg) {
  if (c.iterations < 0) return util::fail(ErrorKind::kUsage, "--iterations must be positive");
  if (auto r = check_limits(c.limits); !r) return std::unexpected(r.error());
  if (auto r = check_prompt_budget_tokens(c.prompt_budget_tokens); !r)
    return std::unexpected(r.error());
  if (c.stop_at_sol && !(*c.stop_at_sol > 0))
    return util::fail(ErrorKind::kUsage, "--stop-at-sol must be above 0");
  if (c.jobs < 0) return util::fail(ErrorKind::kUsage, "--jobs must be positive");
  if (c.jobs > 0 && !c.gpus.empty())
    return util::fail(ErrorKind::kUsage, "give --gpus (one slot per entry) or --jobs, not both");
  if (c.budget_usd < 0) return util::fail(ErrorKind::kUsage, "--budget-usd must be >= 0");
  if (c.executor == "slurm" && (!c.gpus.empty() || c.jobs > 0))
    return util::fail(ErrorKind::kUsage,
                      "--gpus and --jobs are for --executor local; SLURM places each task "
                      "(pass --slurm-arg for partitions, GPUs and limits)");
  if (!c.eval_hosts.empty() && (c.executor == "slurm" || c.jobs > 0))
    return util::fail(ErrorKind::kUsage,
                      "--eval-host is for --executor local, one slot per host entry (or per "
                      "--gpus entry on each host); not with --jobs or --executor slurm");
  for (const auto& host : c.eval_hosts)
    if (auto h = remote::parse_eval_host(host); !h) return std::unexpected(h.error());
  sweep::Options o;
  o.level = c.level;
  o.eval_hosts = c.eval_hosts;
  if (!c.problems.empty()) {
    auto sel = sweep::parse_selection(c.problems);
    if (!sel) return std::unexpected(sel.error());
    o.problems = *sel;
  }
  auto dir = kernelbench_dir(c.kernelbench_dir, cfg);
  if (!dir) return std::unexpected(dir.error());
  o.kernelbench_dir = std::filesystem::absolute(*dir);
  if (!c.gpus.empty()) {
    for (const auto& raw : util::split(c.gpus, ',')) {
      std::string id = util::trim(raw);
      if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
        return util::fail(ErrorKind::kUsage,
                          fmt::format("--gpus '{}': give GPU indices such as 0,1", c.gpus));
      o.gpus.push_back(id);
    }
  }
  o.jobs = c.jobs > 0 ? c.jobs : 1;
  o.executor = c.executor;
  o.slurm_args = c.slurm_args;
  o.model = !c.model.empty() ? c.model : cfg.model.value_or("builtin");
  o.base_url = c.base_url;
  o.mode = c.mode;
  o.iterations = c.iterations;
  if (c.budget_usd > 0) o.budget_usd = c.budget_usd;
  o.python = c.python;
  o.seed = static_cast<uint64_t>(c.seed);
  o.limits = c.limits;
  o.skills = !c.no_skills;
  o.prompt_budget_tokens = c.prompt_budget_tokens;
  o.stop_at_sol = c.stop_at_sol;
  o.output = std::filesystem::absolute(
      !c.output.empty() ? std::filesystem::path(c.output)
                        : std::filesystem::path("results") /
                              fmt::format("level{}_{}.tsv", c.level, safe_name(o.model)));
  return o;
}

int run_sweep(const GlobalOptions& g, const SweepCliOptions& c) {
  auto done = sweep_session(g, c, {});
  if (!done) return report_error(done.error());
  return print_summary(*done, c.json);
}

// -- baseline ------------------------------------------------------------------------------------

struct BaselineCliOptions {
  int level = 0;
  std::string problems;
  std::string kernelbench_dir;
  std::string backend;
  std::string python;
  std::string eval_host;
  double timing_budget = eval::Limits{}.timing_budget_s;
  int threads = 0;
  std::string cuda_graph = "auto";
  std::string rested = "auto";
  bool no_compile = false, json = false;
};

// One line of the baseline table, printed as soon as the problem is measured.
void print_baseline_row(const problems::ProblemRef& p, const json& row) {
  auto num = [](const json& v) {
    return v.is_number() ? fmt::format("{:.2f}", v.get<double>()) : std::string("-");
  };
  const json reason = row.value("compile_reason", json(nullptr));
  std::string note = row.contains("error") ? "error: " + row["error"].get<std::string>()
                     : reason.is_string()  ? reason.get<std::string>()
                                           : "";
  if (note.size() > 100) note = note.substr(0, 97) + "...";
  fmt::print("{:<6} {:<8} {:<40} {:>14} {:>14} {:>8}  {}\n", p.level, p.number,
             p.name.substr(0, 40), num(row.value("eager_us", json(nullptr))),
             num(row.value("compile_us", json(nullptr))), row.value("method", "-"), note);
  std::fflush(stdout);
}

int run_baseline(const GlobalOptions& g, const BaselineCliOptions& c) {
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  std::vector<int> selection;
  if (!c.problems.empty()) {
    auto sel = sweep::parse_selection(c.problems);
    if (!sel) return report_error(sel.error());
    selection = *sel;
  }
  auto dir = kernelbench_dir(c.kernelbench_dir, *cfg);
  if (!dir) return report_error(dir.error());
  auto chosen = problems::select_problems(*dir, c.level, selection);
  if (!chosen) return report_error(chosen.error());
  auto engine = start_engine(g, *cfg, c.python, c.backend, "triton", c.eval_host);
  if (!engine) return report_error(engine.error());
  auto& [st, worker, backend] = *engine;

  util::install_interrupt_handler();
  if (!g.quiet)
    fmt::print(stderr, "baseline  level {}, {} problems, backend {}\n", c.level, chosen->size(),
               backend);
  if (!c.json)
    fmt::print("{:<6} {:<8} {:<40} {:>14} {:>14} {:>8}  {}\n", "level", "problem", "name",
               "eager_us", "compile_us", "method", "note");
  sweep::BaselineOptions o;
  o.backend = backend;
  o.timing_budget_s = c.timing_budget;
  o.threads = threads_for(backend, c.threads);
  o.cuda_graph = c.cuda_graph;
  o.rested = c.rested;
  o.compile = !c.no_compile;
  auto out = sweep::run_baseline(
      *chosen, o, worker, [&] { return start_worker(*cfg, c.python, {}, c.eval_host); }, st,
      &util::cancel_flag(), c.json ? sweep::BaselineObserver() : print_baseline_row);
  if (!out) return report_error(out.error());
  if (c.json)
    fmt::print("{}\n", json{{"level", c.level},
                            {"backend", backend},
                            {"db", st.path().string()},
                            {"baselines", out->rows},
                            {"failed", out->failed}}
                           .dump());
  if (out->interrupted) return kInterrupted;
  return out->failed > 0 ? 1 : 0;
}

// --level (required), --problems and --kernelbench-dir: which problems a sweep or baseline takes.
void add_selection_options(CLI::App* cmd, int& level, std::string& problems,
                           std::string& kernelbench_dir) {
  cmd->add_option("--level", level, "KernelBench level")->required()->check(CLI::PositiveNumber);
  cmd->add_option("--problems", problems, "Problem numbers, e.g. 1-20,35 (default: all)");
  cmd->add_option("--kernelbench-dir", kernelbench_dir, "KernelBench directory");
}

}  // namespace

nlohmann::json sweep_summary_json(const SweepDone& done) {
  const sweep::Options& o = done.options;
  const sweep::Outcome& out = done.outcome;
  json summary = {{"output", o.output.string()}, {"work_dir", sweep::work_dir(o.output).string()},
                  {"db", o.db.string()},         {"planned", out.planned},
                  {"skipped", out.skipped},      {"ran", out.ran},
                  {"failed", out.failed},        {"interrupted", out.interrupted},
                  {"wall_s", done.wall_s}};
  if (!out.rows.empty()) summary["score"] = score::score_json(out.rows);
  return summary;
}

util::Result<SweepDone> sweep_session(const GlobalOptions& g, const SweepCliOptions& c,
                                      const SweepHooks& hooks) {
  auto cfg = config::load_default();
  if (!cfg) return std::unexpected(cfg.error());
  auto opts = sweep_options(c, *cfg);
  if (!opts) return std::unexpected(opts.error());
  sweep::Options& o = *opts;
  std::error_code ec;
  o.binary =
      hooks.binary.empty() ? std::filesystem::read_symlink("/proc/self/exe", ec) : hooks.binary;
  if (ec) return util::fail(ErrorKind::kInternal, "cannot find the openkernel executable");
  auto st = open_store(g, *cfg);
  if (!st) return std::unexpected(st.error());
  o.db = std::filesystem::absolute(st->path());

  auto backend = sweep_backend(c, *cfg);
  if (!backend) return std::unexpected(backend.error());
  o.backend = *backend;
  if (!o.gpus.empty() && o.backend == "cpu")
    return util::fail(ErrorKind::kUsage,
                      "--gpus needs a GPU backend (triton or cuda); on the CPU use --jobs");

  auto tasks = sweep::plan(o);
  if (!tasks) return std::unexpected(tasks.error());
  if (o.limits.no_sandbox)
    fmt::print(stderr, "WARNING: --no-sandbox: generated candidates run WITHOUT the sandbox.\n");
  if (!hooks.observer)
    fmt::print(stderr, "sweep  level {}, {} problems, backend {}, model {}, executor {} -> {}\n",
               o.level, tasks->size(), o.backend, o.model, o.executor, o.output.string());

  if (!hooks.cancel) util::install_interrupt_handler();
  auto t0 = std::chrono::steady_clock::now();
  auto out = sweep::run(o, std::move(*tasks), hooks.cancel ? hooks.cancel : &util::cancel_flag(),
                        hooks.observer ? hooks.observer : sweep_progress(g.quiet));
  if (!out) return std::unexpected(out.error());
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return SweepDone{std::move(o), std::move(*out), wall};
}

void add_sweep_commands(CLI::App& app, GlobalOptions& g, Action& action) {
  auto o = std::make_shared<SweepCliOptions>();
  auto* cmd = app.add_subcommand(
      "sweep", "Optimize a KernelBench level's problems into a results TSV (resumable)");
  add_selection_options(cmd, o->level, o->problems, o->kernelbench_dir);
  add_backend_option(cmd, o->backend, "triton, cuda or cpu (default: triton with a GPU, else cpu)");
  cmd->add_option("--model", o->model, "builtin or a model from the registry (default: config)");
  cmd->add_option("--base-url", o->base_url, "OpenAI-compatible endpoint for --model");
  cmd->add_option("--mode", o->mode, "fast or deep (default fast)")
      ->check(CLI::IsMember({"fast", "deep"}));
  cmd->add_option("--iterations", o->iterations, "Attempts per problem (default: the mode's)");
  cmd->add_option("--budget-usd", o->budget_usd, "LLM spending limit per problem");
  cmd->add_option("--output", o->output,
                  "Results TSV (default results/level<L>_<model>.tsv); problem folders go "
                  "beside it, in a folder of the same name");
  cmd->add_option("--executor", o->executor, "local or slurm (default local)")
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_option("--gpus", o->gpus,
                  "GPU indices, one worker each, e.g. 0,1,2,3 (repeat an index to share a GPU)");
  cmd->add_option("--jobs", o->jobs, "Problems at once without --gpus (default 1)");
  cmd->add_option("--slurm-arg", o->slurm_args,
                  "Extra sbatch argument, e.g. --slurm-arg=--partition=gpu (repeatable)")
      ->allow_extra_args(false);
  add_python_option(cmd, o->python);
  cmd->add_option("--eval-host", o->eval_hosts,
                  "Run the problems' evaluations on this host over ssh, ssh://[user@]host[:port], "
                  "or each in a SLURM allocation, slurm[:SRUN-ARGS]; repeat to spread the "
                  "problems over hosts, one slot per entry (docs/remote.md)")
      ->type_name("URL");
  cmd->add_option("--seed", o->seed, "Seed; each problem's is derived from it (default 1)");
  add_limit_options(cmd, o->limits);
  cmd->add_option("--prompt-budget-tokens", o->prompt_budget_tokens,
                  "Passed to every new optimize session: the model prompt's memory budget in "
                  "tokens (default 9000; at least 1000)");
  cmd->add_option("--stop-at-sol", o->stop_at_sol,
                  "Passed to every new optimize session: stop a problem once a correct kernel "
                  "reaches this fraction of speed of light (default 0.95; 2 or more: never)");
  cmd->add_flag("--no-skills", o->no_skills,
                "Passed to every new optimize session: use no skills of the library and teach it "
                "nothing (ablations)");
  cmd->add_flag("--json", o->json, "Print one JSON summary (with the score) as the last line");
  cmd->add_option("--db", g.db, "Store database");
  cmd->callback([&g, &action, o] { action = [&g, o] { return run_sweep(g, *o); }; });

  auto b = std::make_shared<BaselineCliOptions>();
  auto* base = app.add_subcommand(
      "baseline", "Time each problem's reference, eager and torch.compile, on this device");
  add_selection_options(base, b->level, b->problems, b->kernelbench_dir);
  add_backend_option(base, b->backend,
                     "The device to time on: triton/cuda (GPU) or cpu (default: GPU if present)");
  add_python_option(base, b->python);
  add_eval_host_option(base, b->eval_host);
  base->add_option("--timing-budget", b->timing_budget,
                   "Seconds of timing per measurement (default 4)");
  base->add_option("--threads", b->threads, "CPU threads (default: cores, at most 8, on the CPU)");
  add_timing_mode_options(base, b->cuda_graph, b->rested);
  base->add_flag("--no-compile", b->no_compile, "Skip torch.compile");
  base->add_flag("--json", b->json, "Print one JSON object as the last line");
  base->add_option("--db", g.db, "Store database");
  base->callback([&g, &action, b] { action = [&g, b] { return run_baseline(g, *b); }; });
}

}  // namespace ok::cli
