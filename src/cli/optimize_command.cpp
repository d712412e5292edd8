// `openkernel optimize` (optimize_command.hpp has the contract): the flags, the run, and the CLI's
// front end: progress on stderr, the report on stdout (or, with --json, one JSON object as the
// last line).
#include "cli/optimize_command.hpp"

#include <fmt/core.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "llm/client.hpp"
#include "llm/recorder.hpp"
#include "optimize/frontend.hpp"
#include "optimize/observer.hpp"
#include "optimize/prebuild.hpp"
#include "optimize/prompts.hpp"
#include "optimize/report.hpp"
#include "optimize/session.hpp"
#include "util/cancel.hpp"
#include "util/paths.hpp"

namespace ok::cli {

using nlohmann::json;
using util::ErrorKind;

namespace {

constexpr int kInterrupted = 130;

// Live progress on stderr: one line per step, the running best and the money spent; with
// --quiet only the warnings. The model's text is not shown.
class ProgressPrinter final : public optimize::Observer {
 public:
  explicit ProgressPrinter(bool quiet) : quiet_(quiet) {}

  void started(const optimize::Standing&, const optimize::SessionInfo& info) override {
    show(fmt::format("optimize  {}\n", info.what));
  }
  void strategy(const optimize::Standing&, const std::string& text) override {
    show(fmt::format("  strategy: {}\n", text));
  }
  void generating(const optimize::Standing& s, int number, const std::string& what) override {
    show(fmt::format("[{}/{}] generating ({})  best {}  ${:.4f}\n", number, s.total, what, best(s),
                     s.cost_usd));
  }
  void model_text(int, std::string_view) override {}
  void model_retry(int, const std::string&) override {}
  void evaluating(const optimize::Standing& s, int number, const std::string& what) override {
    show(fmt::format("[{}/{}] evaluating: {}\n", number, s.total, what));
  }
  void diagnosed(const optimize::Standing&, const optimize::Attempt&) override {}
  void attempt_finished(const optimize::Standing& s, const optimize::Attempt& a) override {
    std::string what = a.speedup ? fmt::format("{} {:.3f}x", a.verdict, *a.speedup) : a.verdict;
    std::string why = a.error.empty() ? "" : ": " + a.error.substr(0, a.error.find('\n'));
    if (why.size() > 160) why = why.substr(0, 157) + "...";
    show(fmt::format("[{}] {}{}  ({:.1f} s)  best {}  ${:.4f}\n", a.number, what, why, a.wall_s,
                     best(s), s.cost_usd));
  }
  void search_decision(const optimize::Standing&, int, const std::string& kind,
                       const std::string& text) override {
    show(fmt::format("  search: {}: {}\n", kind, text));
  }
  void warning(const std::string& text) override {
    fmt::print(stderr, "openkernel: warning: {}\n", text);
    std::fflush(stderr);
  }
  void control(const optimize::Standing&, const std::string& state) override {
    show(fmt::format("  control: {}\n", state));
  }
  void stopped(const optimize::Standing&, const std::string& reason) override {
    show(fmt::format("stopped: {}\n", reason));
  }

 private:
  static std::string best(const optimize::Standing& s) {
    return s.best_speedup ? fmt::format("{:.2f}x", *s.best_speedup) : "none";
  }
  void show(const std::string& line) const {
    if (quiet_) return;
    fmt::print(stderr, "{}", line);
    std::fflush(stderr);
  }
  bool quiet_;
};

// Where the run's own messages go: on stderr, or, for a quiet front end, the warnings to its
// observer and the notes nowhere.
class Messages {
 public:
  explicit Messages(const FrontEnd& fe) : fe_(fe) {}
  // A line for the user; `warns`: a quiet front end's observer gets it as a warning.
  void note(const std::string& line, bool warns = false) const {
    if (!fe_.quiet) {
      fmt::print(stderr, "{}\n", line);
    } else if (warns && fe_.observer) {
      fe_.observer->warning(line);
    }
  }
  void warning(const std::string& text) const {
    if (fe_.observer) {
      fe_.observer->warning(text);
    } else if (!fe_.quiet) {
      fmt::print(stderr, "openkernel: warning: {}\n", text);
      std::fflush(stderr);
    }
  }

 private:
  const FrontEnd& fe_;
};

// What a session tells: every event to the front end's observer and, for whoever follows the
// session, to the store (a store that cannot record them costs a warning, not the session).
class SessionObservers {
 public:
  SessionObservers(const Messages& messages, optimize::Observer* front,
                   const std::filesystem::path& db, const std::string& session)
      : messages_(messages),
        front_(front),
        recorded_(open_recorded(db, session)),
        fan_(observers()) {}
  optimize::Observer* observer() { return &fan_; }
  void warn_if_events_were_lost() {
    if (auto e = recorded_ ? recorded_->error() : std::nullopt)
      messages_.warning("not every event of the session was recorded: " + e->message);
  }

 private:
  std::unique_ptr<optimize::StoreObserver> open_recorded(const std::filesystem::path& db,
                                                         const std::string& session) {
    auto r = optimize::StoreObserver::open(db, session);
    if (r) return std::move(*r);
    messages_.warning("the session's events are not recorded: " + r.error().message);
    return nullptr;
  }
  std::vector<optimize::Observer*> observers() {
    std::vector<optimize::Observer*> all;
    if (front_) all.push_back(front_);
    if (recorded_) all.push_back(recorded_.get());
    return all;
  }
  const Messages& messages_;
  optimize::Observer* front_;
  std::unique_ptr<optimize::StoreObserver> recorded_;
  optimize::FanOut fan_;
};

// The flags' ranges (kUsage).
util::Result<void> check_flags(const OptimizeOptions& o) {
  if (o.iterations < 0) return util::fail(ErrorKind::kUsage, "--iterations must be positive");
  if (auto r = check_limits(o.limits); !r) return r;
  if (o.llm.budget_usd < 0) return util::fail(ErrorKind::kUsage, "--budget-usd must be >= 0");
  if (o.in_flight < 0 || o.in_flight > 64)
    return util::fail(ErrorKind::kUsage, "--in-flight must be between 1 and 64");
  if (!(o.stop_at_sol > 0)) return util::fail(ErrorKind::kUsage, "--stop-at-sol must be above 0");
  if (o.budget_wall_s < 0 || o.budget_device_s < 0)
    return util::fail(ErrorKind::kUsage, "--budget-wall-s and --budget-device-s must be positive");
  return check_prompt_budget_tokens(o.prompt_budget_tokens);
}

// A new session's options from the flags, and its id in `session` (kUsage when --session names
// one the store has).
util::Result<optimize::Options> new_session(const OptimizeOptions& o, const config::Config& cfg,
                                            store::Store& st, std::string& session) {
  optimize::Options opts;
  auto prob = resolve_problem(o.problem, cfg);
  if (!prob) return std::unexpected(prob.error());
  opts.reference = std::filesystem::absolute(prob->path).string();
  opts.name = prob->name;
  opts.level = prob->level;
  opts.number = prob->number;
  opts.overrides = prob->overrides;
  opts.model = !o.llm.model.empty() ? o.llm.model : cfg.model.value_or("builtin");
  opts.base_url = o.llm.base_url;
  opts.mode = o.mode;
  opts.iterations = o.iterations;
  if (o.llm.budget_usd > 0) opts.budget_usd = o.llm.budget_usd;
  opts.seed = o.seed >= 0 ? static_cast<uint64_t>(o.seed) : std::random_device{}();
  opts.limits = o.limits;
  opts.search = o.search;
  opts.in_flight = o.in_flight;
  if (o.budget_wall_s > 0) opts.budget_wall_s = o.budget_wall_s;
  if (o.budget_device_s > 0) opts.budget_device_s = o.budget_device_s;
  opts.strategy = o.strategy;
  opts.stop_at_sol = o.stop_at_sol;
  opts.compile_baseline = !o.no_compile_baseline;
  if (!o.prebuild.empty()) opts.prebuild = o.prebuild;
  opts.prompt_budget_tokens = o.prompt_budget_tokens;
  opts.skills = !o.no_skills;
  session = o.session_id.empty() ? optimize::new_session_id() : o.session_id;
  if (!o.session_id.empty()) {
    auto existing = st.find_session(session);
    if (!existing) return std::unexpected(existing.error());
    if (*existing)
      return util::fail(ErrorKind::kUsage,
                        fmt::format("session {} exists in {}; continue it with --resume {}",
                                    session, st.path().string(), session));
  }
  opts.out_dir =
      std::filesystem::absolute(o.out.empty() ? std::filesystem::path("openkernel-out") / session
                                              : std::filesystem::path(o.out));
  return opts;
}

// The model: builtin (no endpoint), or an endpoint from the registry, its key found now, before
// any work.
util::Result<std::optional<llm::Endpoint>> model_endpoint(const LlmOptions& flags,
                                                          const optimize::Options& opts,
                                                          const config::Config& cfg) {
  if (opts.model == "builtin") return std::nullopt;
  auto registry = llm::Registry::load_default();
  if (!registry) return std::unexpected(registry.error());
  LlmOptions lo = flags;
  lo.model = opts.model;
  if (lo.base_url.empty()) lo.base_url = opts.base_url;
  auto ep = resolve_llm(lo, cfg, *registry);
  if (!ep) return std::unexpected(ep.error());
  return std::optional<llm::Endpoint>(*ep);
}

// Prints the report (or, with --json, one JSON line) when the front end wants it, and returns the
// exit code: 130 when the session was interrupted.
int finish(const nlohmann::json& report, const std::string& status, const std::string& session,
           const OptimizeOptions& o, const FrontEnd& fe) {
  if (fe.print_report) {
    if (o.json)
      fmt::print("{}\n", report.dump());
    else
      fmt::print("{}\nReports: {} and report.json\n", optimize::report_markdown(report),
                 report["report_md"].get<std::string>());
  }
  if (status != "interrupted") return 0;
  if (!fe.quiet)
    fmt::print(stderr,
               "interrupted: the best so far is kept; continue with "
               "`openkernel optimize --resume {}`\n",
               session);
  return kInterrupted;
}

// The session to run: a recorded one resumed (--resume) or a new one from the flags.
struct SessionToRun {
  std::string id;
  optimize::Options options;
  std::vector<optimize::Attempt> resumed;
};

util::Result<SessionToRun> session_to_run(const OptimizeOptions& o, const config::Config& cfg,
                                          store::Store& st, const Messages& messages) {
  SessionToRun s;
  if (o.resume.empty()) {
    auto made = new_session(o, cfg, st, s.id);
    if (!made) return std::unexpected(made.error());
    s.options = std::move(*made);
    return s;
  }
  auto positive = [](double v) { return v > 0 ? std::optional(v) : std::nullopt; };
  auto r = optimize::resume_session(st, o.resume,
                                    {o.iterations, positive(o.llm.budget_usd), o.prebuild,
                                     positive(o.budget_wall_s), positive(o.budget_device_s)});
  if (!r) return std::unexpected(r.error());
  s.id = o.resume;
  s.options = std::move(r->options);
  s.resumed = std::move(r->attempts);
  messages.note(fmt::format("resuming session {} after {} recorded attempt{}", s.id,
                            s.resumed.size(), s.resumed.size() == 1 ? "" : "s"));
  return s;
}

// The engine's dependencies for a session, but its observer.
optimize::Dependencies dependencies(eval::Worker& worker, store::Store& st,
                                    optimize::Agents& agents, const config::Config& cfg,
                                    const OptimizeOptions& o, const optimize::Options& opts,
                                    const FrontEnd& fe) {
  optimize::Dependencies deps;
  deps.worker = &worker;
  // Ctrl-C stops a worker that is still starting (or waiting for its SLURM allocation).
  deps.cancel = fe.cancel ? fe.cancel : &util::cancel_flag();
  deps.restart_worker = [&cfg, &o, cancel = deps.cancel] {
    return start_worker(cfg, o.python, {}, o.eval_host, cancel);
  };
  deps.store = &st;
  deps.generator = agents.generator();
  deps.critic = agents.critic();
  deps.ledger = agents.ledger();
  deps.control = fe.control;
  deps.cache_dir = util::cache_dir().string();
  if (optimize::prebuild_wanted(opts)) {
    deps.prebuild_slots = optimize::default_prebuild_slots(std::thread::hardware_concurrency());
    deps.start_build_worker = [&cfg, &o, cancel = deps.cancel] {
      return start_worker(cfg, o.python,
                          {{"CUDA_VISIBLE_DEVICES", ""}, {"OPENKERNEL_WORKER_PRIORITY", "idle"}},
                          o.eval_host, cancel);
    };
  }
  return deps;
}

}  // namespace

// Ctrl-C before the first attempt (while the problem was being prepared): the session's row is
// kept as interrupted, so `--resume` continues it and the session list shows it.
static std::unexpected<util::Error> interrupted_early(store::Store& st,
                                                      const std::string& session) {
  if (auto row = st.find_session(session); row && *row) {
    store::SessionRow r = **row;
    r.status = "interrupted";
    (void)st.update_session(r);
  }
  return util::fail(ErrorKind::kCancelled,
                    fmt::format("interrupted while preparing the problem, before any attempt; "
                                "continue with `openkernel optimize --resume {}`",
                                session));
}

util::Result<OptimizeRun> optimize_session(const GlobalOptions& g, const OptimizeOptions& o,
                                           const FrontEnd& fe) {
  const Messages messages(fe);
  auto cfg = config::load_default();
  if (!cfg) return std::unexpected(cfg.error());
  if (auto r = check_flags(o); !r) return std::unexpected(r.error());
  auto st = open_store(g, *cfg);
  if (!st) return std::unexpected(st.error());
  auto run = session_to_run(o, *cfg, *st, messages);
  if (!run) return std::unexpected(run.error());
  optimize::Options& opts = run->options;
  const std::string& session = run->id;

  // From here Ctrl-C stops the session: a worker still starting is stopped with it (not left to
  // finish its start-up after this process ended).
  if (fe.handle_interrupt) util::install_interrupt_handler();
  const std::atomic<bool>* cancel = fe.cancel ? fe.cancel : &util::cancel_flag();
  auto worker = start_worker(*cfg, o.python, {}, o.eval_host, cancel);
  if (!worker && worker.error().kind == ErrorKind::kCancelled)  // before the session's row
    return util::fail(ErrorKind::kCancelled, worker.error().message + " (nothing recorded)");
  if (!worker) return std::unexpected(worker.error());
  auto backend = choose_backend(*worker, o.resume.empty() ? o.backend : opts.backend, "triton");
  if (!backend) return std::unexpected(backend.error());
  if (o.resume.empty()) {
    opts.backend = *backend;
    opts.limits.threads = threads_for(opts.backend, o.limits.threads);
  }
  if (opts.limits.no_sandbox)
    messages.note("WARNING: --no-sandbox: generated candidates run WITHOUT the sandbox.", true);

  auto endpoint = model_endpoint(o.llm, opts, *cfg);
  if (!endpoint) return std::unexpected(endpoint.error());

  std::error_code ec;
  std::filesystem::create_directories(opts.out_dir, ec);
  if (ec)
    return util::fail(ErrorKind::kBadInput,
                      fmt::format("cannot create {}: {}", opts.out_dir.string(), ec.message()));
  if (o.resume.empty())
    if (auto r = st->insert_session(optimize::new_session_row(session, opts)); !r)
      return std::unexpected(r.error());
  if (fe.on_session) fe.on_session(session);
  messages.note(
      fmt::format("session {}  (resume with: openkernel optimize --resume {})", session, session));

  auto problem = optimize::prepare_problem(*worker, opts, cancel);
  if (!problem && problem.error().kind == ErrorKind::kCancelled)
    return interrupted_early(*st, session);
  if (!problem) return std::unexpected(problem.error());

  auto agents = optimize::Agents::make(
      opts, session, *endpoint, st->path(), optimize::spent_usd(run->resumed),
      [&messages](const std::string& why) { messages.warning(why); });
  auto deps = dependencies(*worker, *st, *agents, *cfg, o, opts, fe);
  SessionObservers observers(messages, fe.observer, st->path(), session);
  deps.observer = observers.observer();
  auto outcome =
      optimize::run_session(session, opts, std::move(*problem), std::move(run->resumed), deps);
  observers.warn_if_events_were_lost();  // also when the session failed
  if (!outcome) return std::unexpected(outcome.error());

  auto report = optimize::write_reports(opts, *outcome, st->path());
  if (!report) return std::unexpected(report.error());
  return OptimizeRun{std::move(*report), outcome->status, session};
}

int run_optimize(const GlobalOptions& g, const OptimizeOptions& o, const FrontEnd& fe) {
  auto run = optimize_session(g, o, fe);
  if (!run && run.error().kind == ErrorKind::kCancelled) {
    fmt::print(stderr, "openkernel: {}\n", run.error().message);
    return kInterrupted;
  }
  if (!run) return report_error(run.error());
  return finish(run->report, run->status, run->session, o, fe);
}

void add_optimize_flags(CLI::App* cmd, OptimizeOptions& o, GlobalOptions& g) {
  add_problem_options(cmd, o.problem);
  add_llm_options(cmd, o.llm, true);
  add_backend_option(cmd, o.backend, "triton, cuda or cpu (default: triton with a GPU, else cpu)");
  cmd->add_option("--mode", o.mode, "fast or deep: iterations and breadth (default fast)")
      ->check(CLI::IsMember({"fast", "deep"}));
  cmd->add_option("--iterations", o.iterations,
                  "Attempts at most (default: 6 in fast mode, 16 in deep mode)");
  cmd->add_option("--out", o.out,
                  "Folder for the attempts, best kernel and reports "
                  "(default ./openkernel-out/SESSION)");
  cmd->add_option("--resume", o.resume, "Continue a recorded session");
  cmd->add_option("--session", o.session_id,
                  "Id for the new session (default: generated; sweeps name their sessions)")
      ->check([](const std::string& id) -> std::string {
        if (id.empty() || id.size() > 64) return "a session id has 1 to 64 characters";
        for (char c : id)
          if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
            return "a session id holds letters, digits, '-', '_' and '.' only";
        return "";
      })
      ->excludes("--resume");
  cmd->add_option("--search", o.search,
                  "engine (intent tree under an evolving strategy), best-of-n (independent "
                  "samples) or prior (the proposer's order); default engine")
      ->check(CLI::IsMember({"engine", "best-of-n", "prior"}));
  cmd->add_option("--in-flight", o.in_flight,
                  "Generations in flight while the device evaluates (default: 1 builtin; a "
                  "model 2 fast, 4 deep)");
  cmd->add_option("--budget-wall-s", o.budget_wall_s,
                  "Stop issuing work after this many seconds of wall time");
  cmd->add_option("--budget-device-s", o.budget_device_s,
                  "Stop issuing work after this many seconds of device (evaluation) time");
  cmd->add_option("--strategy", o.strategy,
                  "Use this strategy of the store's population instead of the population's "
                  "choice (see `openkernel strategies`)");
  cmd->add_option("--stop-at-sol", o.stop_at_sol,
                  "Stop once a correct kernel reaches this fraction of speed of light (default "
                  "0.95; 2 or more: never, e.g. to measure every template point)");
  cmd->add_option("--prebuild", o.prebuild,
                  "Build load_inline candidates on spare cores while they wait for the device: "
                  "off (default; opt-in, not yet measured on the GPU), auto (on a GPU backend) "
                  "or on")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_option("--prompt-budget-tokens", o.prompt_budget_tokens,
                  "Tokens (estimated as characters / 4) for the model prompt's memory of the "
                  "session: every section's budget scaled to this total (default 9000)");
  cmd->add_flag("--no-compile-baseline", o.no_compile_baseline,
                "Do not time torch.compile(reference) (speedup_compile stays null)");
  cmd->add_flag("--no-skills", o.no_skills,
                "Use no skills of the library and teach it nothing (ablations; docs/skills.md)");
  cmd->add_flag("--json", o.json, "Print one JSON object (the report) as the last line");
  add_python_option(cmd, o.python);
  add_eval_host_option(cmd, o.eval_host);
  cmd->add_option("--seed", o.seed, "Seed of the builtin generator (default: random)");
  add_limit_options(cmd, o.limits);
  cmd->add_option("--db", g.db, "Store database");
}

void add_optimize_command(CLI::App& app, GlobalOptions& g, Action& action) {
  auto o = std::make_shared<OptimizeOptions>();
  auto* cmd = app.add_subcommand(
      "optimize",
      "Generate, verify and time kernels for a reference; keep the fastest correct one");
  add_optimize_flags(cmd, *o, g);
  cmd->callback([&g, &action, o] {
    action = [&g, o] {
      ProgressPrinter printer(g.quiet);
      FrontEnd fe;
      fe.observer = &printer;
      return run_optimize(g, *o, fe);
    };
  });
}

}  // namespace ok::cli
