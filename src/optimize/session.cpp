// Long (about 870 lines): the orchestrator's loop, its replay on resume and the pre-build wiring
// live together here; the code-health work splits Loop (typed failure reasons, one issue rule).
#include "optimize/session.hpp"

#include <fmt/core.h>

#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "eval/evaluator.hpp"
#include "eval/record.hpp"
#include "optimize/prebuild.hpp"
#include "search/strategy.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"

namespace ok::optimize {

using nlohmann::json;
using util::ErrorKind;
using util::fail;

json Options::to_json() const {
  json j = {{"reference", reference},
            {"name", name},
            {"overrides", overrides},
            {"backend", backend},
            {"model", model},
            {"base_url", base_url},
            {"mode", mode},
            {"iterations", iterations},
            {"out_dir", out_dir.string()},
            {"seed", seed},
            {"threads", threads},
            {"timeout_s", timeout_s},
            {"trials", trials},
            {"timing_budget_s", timing_budget_s},
            {"no_sandbox", no_sandbox},
            {"search", search},
            {"in_flight", in_flight},
            {"strategy", strategy},
            {"stop_at_sol", stop_at_sol},
            {"compile_baseline", compile_baseline},
            {"prebuild", prebuild}};
  j["budget_wall_s"] = budget_wall_s ? json(*budget_wall_s) : json(nullptr);
  j["budget_device_s"] = budget_device_s ? json(*budget_device_s) : json(nullptr);
  j["level"] = level ? json(*level) : json(nullptr);
  j["number"] = number ? json(*number) : json(nullptr);
  j["budget_usd"] = budget_usd ? json(*budget_usd) : json(nullptr);
  return j;
}

Options Options::from_json(const json& j) {
  Options o;
  o.reference = j.value("reference", "");
  o.name = j.value("name", "");
  if (j.contains("level") && j["level"].is_number()) o.level = j["level"].get<int>();
  if (j.contains("number") && j["number"].is_number()) o.number = j["number"].get<int>();
  o.overrides = j.value("overrides", std::map<std::string, std::string>{});
  o.backend = j.value("backend", "cpu");
  o.model = j.value("model", "builtin");
  o.base_url = j.value("base_url", "");
  o.mode = j.value("mode", "fast");
  o.iterations = j.value("iterations", 0);
  if (j.contains("budget_usd") && j["budget_usd"].is_number())
    o.budget_usd = j["budget_usd"].get<double>();
  o.out_dir = j.value("out_dir", "");
  o.seed = j.value("seed", uint64_t{0});
  o.threads = j.value("threads", 0);
  o.timeout_s = j.value("timeout_s", 300.0);
  o.trials = j.value("trials", 5);
  o.timing_budget_s = j.value("timing_budget_s", 4.0);
  o.no_sandbox = j.value("no_sandbox", false);
  // Sessions from before the search engine ran the plain loop: they resume as `prior`.
  o.search = j.value("search", std::string("prior"));
  o.in_flight = j.value("in_flight", 1);
  if (j.contains("budget_wall_s") && j["budget_wall_s"].is_number())
    o.budget_wall_s = j["budget_wall_s"].get<double>();
  if (j.contains("budget_device_s") && j["budget_device_s"].is_number())
    o.budget_device_s = j["budget_device_s"].get<double>();
  o.strategy = j.value("strategy", std::string());
  o.stop_at_sol = j.value("stop_at_sol", kSpeedOfLightStop);
  o.compile_baseline = j.value("compile_baseline", true);
  o.prebuild = j.value("prebuild", std::string("off"));
  return o;
}

int default_iterations(const std::string& mode) {
  return mode == "deep" ? 16 : 6;
}

int default_in_flight(const std::string& mode, bool builtin) {
  if (builtin) return 1;
  return mode == "deep" ? 4 : 2;
}

std::string new_session_id() {
  return util::time_id("s");
}

store::SessionRow new_session_row(const std::string& id, const Options& o) {
  store::SessionRow row;
  row.id = id;
  row.reference = o.reference;
  row.name = o.name;
  row.backend = o.backend;
  row.model = o.model;
  row.mode = o.mode;
  row.status = "running";
  row.options_json = o.to_json().dump();
  row.out_dir = o.out_dir.string();
  return row;
}

util::Result<ProblemContext> prepare_problem(eval::Worker& worker, const Options& o) {
  ProblemContext p;
  p.reference_path = o.reference;
  p.name = o.name;
  p.backend = o.backend;
  auto src = util::read_file(o.reference);
  if (!src) return std::unexpected(src.error());
  p.source = *src;
  const auto limit = std::chrono::seconds(600);
  // FLOPs and bytes for the prompts. `inspect` runs the reference on the CPU at full size, which
  // costs seconds to minutes for big problems; the builtin generator does not need it, and the
  // evaluations report the same figures in their roofline.
  if (o.model != "builtin") {
    auto inspect = worker.call(
        {{"op", "inspect"}, {"reference", o.reference}, {"overrides", o.overrides}}, limit);
    if (!inspect) return std::unexpected(inspect.error());
    p.inspect = *inspect;
  } else {
    p.inspect = json::object();
  }
  auto graph = worker.call(
      {{"op", "analyze"}, {"reference", o.reference}, {"overrides", o.overrides}}, limit);
  if (!graph && graph.error().kind == ErrorKind::kBadInput) return std::unexpected(graph.error());
  // A graph that cannot be built is not fatal: an LLM does not need it, and the builtin
  // generator reports the problem unsupported with the reason.
  p.graph = graph ? *graph : json{{"traceable", false}, {"reason", graph.error().message}};
  auto device =
      worker.call({{"op", "device_info"}, {"device", o.backend == "cpu" ? "cpu" : "cuda"}}, limit);
  p.device = device ? *device : json{{"name", o.backend == "cpu" ? "CPU" : "GPU"}};
  return p;
}

std::vector<Attempt> attempts_from_rows(const std::vector<store::AttemptRow>& rows,
                                        store::Store* store) {
  std::vector<Attempt> out;
  for (const auto& r : rows) {
    Attempt a;
    a.number = r.number;
    a.generator = r.generator;
    a.path = r.path;
    a.verdict = r.verdict;
    a.correct = r.correct;
    a.speedup = r.speedup;
    a.runtime_us = r.runtime_us;
    a.error = r.error;
    a.cost_usd = r.cost_usd;
    a.params = json::parse(r.params_json, nullptr, false);
    if (a.params.is_discarded()) a.params = json::object();
    a.description = r.description;
    if (!r.diagnosis_json.empty()) a.diagnosis = json::parse(r.diagnosis_json, nullptr, false);
    if (a.diagnosis.is_discarded()) a.diagnosis = nullptr;
    a.wall_s = r.wall_s;
    a.evaluation_id = r.evaluation_id;
    if (store && a.evaluation_id) {
      auto text = store->evaluation_result(*a.evaluation_id);
      if (text && *text) {
        json result = json::parse(**text, nullptr, false);
        if (result.is_object()) a.summary = summarize_result(result);
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

namespace {

std::optional<double> median_of(const json& r, const char* key) {
  if (!r.contains(key)) return std::nullopt;
  const json& v = r[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_object() && v.contains("median") && v["median"].is_number())
    return v["median"].get<double>();
  return std::nullopt;
}

}  // namespace

search::Observation observation_of(const Attempt& a, const search::TemplateSpace& space) {
  search::Observation o;
  o.attempt = a.number;
  o.evaluated = a.evaluation_id.has_value();
  o.correct = a.correct;
  o.speedup = a.speedup;
  o.verdict = a.verdict;
  o.cost_usd = a.cost_usd;
  if (a.diagnosis.is_object()) {
    o.bottleneck = a.diagnosis.value("bottleneck", "");
    if (a.diagnosis.contains("suggestions")) o.suggestions = a.diagnosis["suggestions"];
  }
  if (!space.empty() && a.params.is_object()) o.point = space.find(a.params);
  return o;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One attempt on its way: generated on its own thread, then evaluated, then diagnosed.
struct Flight {
  search::Direction direction;
  std::future<Generation> generation;
  Clock::time_point issued;
  Attempt attempt;
  bool evaluated = false;  // evaluated, or settled without an evaluation (attempt.verdict set)
  std::optional<int64_t> candidate_id;
  std::future<json> diagnosis;
  double critic_cost = 0;
  std::string stop;   // a stop reason this attempt gives (speed_of_light, exhausted, ...)
  bool skip = false;  // no attempt to record
  bool on_device = false;
  std::future<util::Result<json>> evaluation;
  Clock::time_point eval_started;
  size_t index = 0;                     // into the session's attempts, once recorded
  std::optional<Generation> generated;  // taken from `generation` once it is ready
  bool offered = false;                 // considered for a pre-build
};

// The flight's generation, taken from its future the first time (the future must be ready).
Generation& generated(Flight& f) {
  if (!f.generated) f.generated = f.generation.get();
  return *f.generated;
}

bool generation_ready(const Flight& f) {
  return f.generated.has_value() ||
         (f.generation.valid() &&
          f.generation.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
}

class Loop {
 public:
  Loop(std::string id, const Options& o, ProblemContext p, std::vector<Attempt> history,
       Dependencies d)
      : id_(std::move(id)), o_(o), p_(std::move(p)), d_(std::move(d)) {
    out_.session = id_;
    out_.attempts = std::move(history);
    out_.device = p_.device;
    for (size_t i = 0; i < out_.attempts.size(); ++i) consider_best(i);
    for (const auto& a : out_.attempts) resumed_cost_ += a.cost_usd;
  }

  util::Result<Outcome> run() {
    auto row = d_.store->find_session(id_);
    if (!row) return std::unexpected(row.error());
    if (!*row) return fail(ErrorKind::kInternal, "session " + id_ + " is not in the store");
    session_ = **row;
    if (session_.compile_runtime_us) out_.compile_runtime_us = session_.compile_runtime_us;
    const int total = o_.iterations > 0 ? o_.iterations : default_iterations(o_.mode);
    total_ = total;
    in_flight_ =
        o_.in_flight > 0 ? o_.in_flight : default_in_flight(o_.mode, o_.model == "builtin");
    std::filesystem::create_directories(o_.out_dir / "attempts");
    if (auto r = start_search(); !r) return std::unexpected(r.error());
    emit("started", 0, total, fmt::format("{} on {} with {}", p_.name, o_.backend, o_.model));
    emit("strategy", 0, total,
         fmt::format("{} search, strategy {} for {} problems, {} in flight{}",
                     search::policy_name(planner_->policy()), strategy_.id, class_, in_flight_,
                     planner_->space().empty()
                         ? ""
                         : fmt::format(", {} template points", planner_->space().size())));
    start_prebuilds();
    started_ = Clock::now();
    out_.stop_reason = "iterations";
    std::string stopping;  // why no new work is issued ("" while running)
    // Directions issued before a kill but never recorded are generated again first.
    for (auto& d : replay_pending_) launch(d);
    replay_pending_.clear();
    while (true) {
      if (stopping.empty()) stopping = should_stop();
      if (stopping.empty()) top_up(total);
      publish_decisions();
      if (flights_.empty()) break;
      const bool drop = stopping == "interrupted" || stopping == "error";
      const bool no_device = stopping == "wall_time" || stopping == "device_time";
      if ((drop || no_device) && prebuild_) prebuild_->stop();  // nothing more will be evaluated
      if (drop) {
        // Ctrl-C: attempts not on the device yet are abandoned (their directions replay on
        // resume); the one on the device comes back cancelled and is kept.
        while (!flights_.empty() && !flights_.back().evaluated && !flights_.back().on_device) {
          if (flights_.back().generation.valid()) flights_.back().generation.wait();
          flights_.pop_back();
        }
        if (flights_.empty()) continue;
      }
      bool progressed = false;
      // The device's result: record the attempt at once and start its diagnosis.
      if (device_ &&
          device_->evaluation.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        Flight& f = *device_;
        device_ = nullptr;
        if (auto r = complete(f); !r) return std::unexpected(r.error());
        if (!f.stop.empty() && stopping.empty()) stopping = f.stop;
        progressed = true;
      }
      // A diagnosed front teaches the planner, which may issue the next generation at once.
      if (flights_.front().evaluated && diagnosed(flights_.front())) {
        Flight& f = flights_.front();
        if (auto r = finish(f); !r) return std::unexpected(r.error());
        if (!f.stop.empty() && stopping.empty()) stopping = f.stop;
        flights_.pop_front();
        continue;
      }
      // The device is free: the oldest generated attempt goes next (issue order).
      if (!device_) {
        for (auto& f : flights_) {
          if (f.evaluated || f.on_device) continue;
          if (generation_ready(f)) {
            if (auto r = start(f, no_device || drop); !r) return std::unexpected(r.error());
            if (!f.stop.empty() && stopping.empty()) stopping = f.stop;
            progressed = true;
          }
          break;
        }
      }
      // What still waits for the device is built meanwhile (one that went to it just now is not).
      if (prebuild_ && !drop && !no_device) offer_prebuilds();
      if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (!stopping.empty())
      out_.stop_reason = stopping;
    else if (exhausted_)
      out_.stop_reason = "exhausted";
    out_.status = out_.stop_reason == "interrupted" ? "interrupted" : "finished";
    out_.cost_usd = spent();
    if (prebuild_) prebuild_->stop();
    if (out_.best) {
      const Attempt& b = out_.attempts[*out_.best];
      out_.best_path = o_.out_dir / ("best_" + sanitize(p_.name) + ".py");
      if (auto src = util::read_file(b.path)) (void)util::write_file(out_.best_path, *src);
    }
    if (out_.status == "finished") learn();
    checkpoint();
    save_session(out_.status);
    emit("stopped", 0, total, out_.stop_reason);
    return out_;
  }

 private:
  // The planner for this session: a new one under the population's choice of strategy, or the
  // recorded one rebuilt by replaying the recorded attempts.
  util::Result<void> start_search() {
    auto policy = search::parse_policy(o_.search);
    if (!policy)
      return fail(ErrorKind::kUsage, "unknown search " + o_.search + " (engine, best-of-n, prior)");
    auto points = d_.generator->space(p_);
    search::TemplateSpace space(points);
    class_ = problem_class(points);
    auto pop = load_population();
    if (!pop) return std::unexpected(pop.error());
    population_ = std::move(*pop);
    auto saved = d_.store->search_state(id_, "intents");
    if (!saved) return std::unexpected(saved.error());
    json earlier = *saved ? json::parse(**saved, nullptr, false) : json();
    std::mt19937_64 rng(o_.seed ^ 0x57A7E6ull);
    if (earlier.is_object() && earlier.contains("strategy")) {
      auto s = search::Strategy::from_json(earlier["strategy"]);
      if (!s) return std::unexpected(s.error());
      strategy_ = *s;
    } else if (!o_.strategy.empty()) {
      const search::Strategy* s = population_.find(o_.strategy);
      if (!s) return fail(ErrorKind::kUsage, "no strategy " + o_.strategy + " in the store");
      strategy_ = *s;
    } else {
      strategy_ = population_.choose(class_, rng);
    }
    p_.guidance = strategy_.guidance;
    planner_.emplace(*policy, search::search_params(strategy_), std::move(space), o_.seed, p_.name);
    // Replay: the same issue rule as the live loop, so the same directions come out.
    std::deque<search::Direction> issued;
    for (const auto& a : out_.attempts) {
      while (planner_->issued() < planner_->observed() + in_flight_ &&
             planner_->issued() < total_) {
        auto d = planner_->next();
        if (!d) break;
        issued.push_back(*d);
      }
      search::Direction d;
      if (!issued.empty() && issued.front().sequence == a.number) {
        d = issued.front();
        issued.pop_front();
      }
      planner_->observe(d, observation_of(a, planner_->space()));
    }
    for (auto& d : issued) replay_pending_.push_back(d);
    issued.clear();
    (void)planner_->take_decisions();  // replayed decisions were shown the first time
    if (!out_.attempts.empty())
      emit("search", 0, 0,
           fmt::format("replayed: {} recorded attempts into the intent tree ({} intents)",
                       out_.attempts.size(), planner_->intents().size()));
    return {};
  }

  util::Result<search::Population> load_population() {
    auto text = d_.store->search_state("global", "strategies");
    if (!text) return std::unexpected(text.error());
    if (!*text) return search::Population::seeded();
    json j = json::parse(**text, nullptr, false);
    auto pop = search::Population::from_json(j);
    if (!pop) {
      emit("warning", 0, 0,
           "the stored strategy population is unreadable (" + pop.error().message +
               "); starting from the seeds");
      return search::Population::seeded();
    }
    return pop;
  }

  // The problem class strategies are chosen by: the builtin proposer's pattern, else "other".
  static std::string problem_class(const std::vector<json>& points) {
    if (!points.empty() && points.front().is_object())
      return points.front().value("pattern", std::string("other"));
    return "other";
  }

  // The outer loop learns from a finished session: its outcome is recorded against the
  // strategy, which then mutates reflectively from the failure trace; the population is bounded
  // and saved.
  void learn() {
    if (planner_->policy() != search::Policy::kEngine || out_.attempts.empty()) return;
    search::Outcome r;
    r.problem = p_.name;
    r.problem_class = class_;
    r.correct = out_.best.has_value();
    r.speedup = out_.best ? out_.attempts[*out_.best].speedup.value_or(0) : 0;
    r.cost_usd = spent();
    r.evaluations = static_cast<int>(out_.attempts.size());
    r.evaluations_to_best = out_.best ? out_.attempts[*out_.best].number : 0;
    for (const auto& i : planner_->intents())
      if (i.status == "failed" || i.status == "pruned")
        r.failures.push_back(i.note.rfind("no gain", 0) == 0 ? "no_gain" : i.note);
    for (const auto& dcs : decisions_log_)
      if (dcs.kind == "stagnation") r.failures.push_back("stagnation");
    // Read, learn and write under one write transaction: sessions of a sweep finish side by side
    // and each must add to the population, not overwrite another's lesson.
    auto& db = d_.store->db();
    if (auto b = db.exec("BEGIN IMMEDIATE"); !b) {
      emit("warning", 0, 0, "the strategy population was not updated: " + b.error().message);
      return;
    }
    auto pop = load_population();
    if (pop) population_ = std::move(*pop);
    if (!population_.find(strategy_.id)) {
      // Pruned meanwhile by another session: its lesson has nowhere to go.
      (void)db.exec("ROLLBACK");
      return;
    }
    population_.record(strategy_.id, r);
    std::mt19937_64 rng(o_.seed ^ 0x3EF1EC7ull);
    const search::Strategy& child = population_.mutate(strategy_.id, class_, rng);
    std::string text =
        fmt::format("strategy_mutated: {} -> {}: {}", strategy_.id, child.id, child.mutation);
    population_.prune();
    auto w = d_.store->put_search_state("global", "strategies", population_.to_json().dump());
    if (w) w = db.exec("COMMIT");
    if (!w) {
      (void)db.exec("ROLLBACK");
      emit("warning", 0, 0, "the strategy population was not saved: " + w.error().message);
      return;
    }
    emit("search", 0, 0, text);
  }

  std::string should_stop() const {
    if (cancelled()) return "interrupted";
    if (o_.budget_usd && spent() >= *o_.budget_usd) return "budget";
    if (o_.budget_wall_s && seconds_since(started_) >= *o_.budget_wall_s) return "wall_time";
    if (o_.budget_device_s && device_s_ >= *o_.budget_device_s) return "device_time";
    return "";
  }

  // Issues directions until K are in flight (proposal n after results 1..n-K).
  void top_up(int total) {
    while (!exhausted_ && planner_->issued() < planner_->observed() + in_flight_ &&
           planner_->issued() < total) {
      auto d = planner_->next();
      if (!d) {
        exhausted_ = true;
        break;
      }
      launch(*d);
    }
  }

  void launch(const search::Direction& d) {
    Flight f;
    f.direction = d;
    f.issued = Clock::now();
    emit("generating", d.sequence, 0, d.title.empty() ? d_.generator->name() : d.title);
    Generator* gen = d_.generator;
    // The generation sees the observed attempts (1..n-K), whatever else has been recorded
    // meanwhile, so its prompt does not depend on timing.
    const auto seen =
        std::min<size_t>(static_cast<size_t>(planner_->observed()), out_.attempts.size());
    std::vector<Attempt> history(out_.attempts.begin(),
                                 out_.attempts.begin() + static_cast<ptrdiff_t>(seen));
    f.generation = std::async(std::launch::async, [gen, p = p_, history = std::move(history), d]() {
      return gen->next(p, history, &d);
    });
    flights_.push_back(std::move(f));
  }

  // Takes a generated attempt: a failed generation (or, with the device stopped by a time
  // budget or Ctrl-C, a candidate kept unevaluated) is settled and recorded at once; a candidate
  // goes to the device, whose result complete() takes.
  util::Result<void> start(Flight& f, bool no_device) {
    Generation g = std::move(generated(f));
    if (prebuild_) prebuild_->withdraw(f.direction.sequence);
    Attempt& a = f.attempt;
    a.number = f.direction.sequence;
    a.generator = d_.generator->name();
    a.params = g.params;
    if (f.direction.intent >= 0) {
      const auto& i = planner_->intents()[static_cast<size_t>(f.direction.intent)];
      a.params["intent"] = {{"id", i.id}, {"title", i.title}};
    }
    a.description = g.description;
    a.cost_usd = g.cost_usd;
    if (g.source.empty() && g.error.empty()) {
      f.evaluated = true;
      f.skip = true;  // nothing to record: the generator has nothing left
      f.stop = "exhausted";
      return {};
    }
    if (!g.error.empty()) {
      a.verdict = g.verdict.empty() ? "generation_failed" : g.verdict;
      a.error = g.error;
      if (g.exhausted) f.stop = a.verdict == "unsupported" ? "unsupported" : "exhausted";
      if (cancelled()) f.stop = "interrupted";
      return settled(f);
    }
    a.path = (o_.out_dir / "attempts" / fmt::format("attempt_{:03d}.py", a.number)).string();
    if (auto w = util::write_file(a.path, g.source); !w) return std::unexpected(w.error());
    if (no_device) {
      a.verdict = "not_evaluated";
      a.error = "the search stopped before this candidate was evaluated; it is kept at " + a.path;
      return settled(f);
    }
    emit("evaluating", a.number, 0, a.description);
    eval::EvalRequest req;
    req.reference = o_.reference;
    req.candidate = a.path;
    req.backend = o_.backend;
    req.trials = o_.trials;
    req.timeout_s = o_.timeout_s;
    req.overrides = o_.overrides;
    req.threads = o_.threads;
    req.timing_budget_s = o_.timing_budget_s;
    req.cache_dir = d_.cache_dir;
    req.no_sandbox = o_.no_sandbox;
    req.spare = true;  // the session's next evaluation starts without waiting for a process
    // The torch.compile baseline once per session, on the GPU (docs/optimize.md).
    if (o_.compile_baseline && o_.backend != "cpu" && !out_.compile_runtime_us && !asked_compile_) {
      req.compile_baseline = true;
      asked_compile_ = true;
    }
    f.eval_started = Clock::now();
    if (first_eval_ == Clock::time_point{}) first_eval_ = f.eval_started;
    // The device's own thread: the loop keeps diagnosing, learning and issuing meanwhile.
    f.evaluation = std::async(std::launch::async, [worker = d_.worker, req, cancel = d_.cancel] {
      return eval::evaluate(*worker, req, cancel);
    });
    f.on_device = true;
    device_ = &f;
    return {};
  }

  // The device's result for `f`: the evaluation recorded, the attempt recorded, the diagnosis
  // started.
  util::Result<void> complete(Flight& f) {
    auto result = f.evaluation.get();
    f.on_device = false;
    last_eval_end_ = Clock::now();
    device_s_ += std::chrono::duration<double>(last_eval_end_ - f.eval_started).count();
    ++evaluations_;
    Attempt& a = f.attempt;
    if (!result) {
      if (result.error().kind == ErrorKind::kCancelled) {
        f.stop = "interrupted";
        a.verdict = "not_evaluated";
        a.error = "interrupted during its evaluation; the candidate is kept at " + a.path;
        return settled(f);
      }
      a.verdict = "evaluator_error";
      a.error = result.error().message;
      if (!d_.restart_worker) {
        f.stop = "error";
        return settled(f);
      }
      auto w = d_.restart_worker();
      if (!w) {
        out_.error = "the evaluation worker could not be restarted: " + w.error().message;
        f.stop = "error";
        return settled(f);
      }
      *d_.worker = std::move(*w);
      return settled(f);
    }
    json& r = *result;
    a.verdict = r.value("verdict", "unknown");
    a.correct = r.value("correct", false) && r.value("valid", false);
    if (a.correct && r["speedup"].is_number()) a.speedup = r["speedup"].get<double>();
    a.runtime_us = median_of(r, "runtime_us");
    if (auto e = median_of(r, "ref_runtime_us"); e && a.correct) out_.eager_runtime_us = e;
    if (auto c = median_of(r, "compile_runtime_us")) out_.compile_runtime_us = c;
    a.error = failure_text(r);
    a.summary = summarize_result(r);
    r["versions"] = d_.worker->hello().value("versions", json::object());
    auto ids = eval::record_evaluation(*d_.store, {p_.name, o_.reference, o_.level, o_.number},
                                       a.path, r, id_);
    if (!ids) return std::unexpected(ids.error());
    a.evaluation_id = ids->evaluation_id;
    f.candidate_id = ids->candidate_id;
    if (!cancelled()) {
      Critic* critic = d_.critic;
      f.diagnosis = std::async(std::launch::async, [critic, p = p_, a, r, cost = &f.critic_cost] {
        return critic->diagnose(p, a, r, *cost);
      });
    }
    double sol = r.contains("roofline") && r["roofline"].is_object()
                     ? r["roofline"].value("fraction_of_speed_of_light", 0.0)
                     : 0.0;
    if (a.correct && sol >= o_.stop_at_sol) f.stop = "speed_of_light";
    return settled(f);
  }

  // Records a settled attempt at once (so kill -9 loses at most what is in flight); its
  // diagnosis follows in finish().
  util::Result<void> settled(Flight& f) {
    f.evaluated = true;
    f.attempt.wall_s = seconds_since(f.issued);
    if (auto r = record(f.attempt, f.candidate_id); !r) return std::unexpected(r.error());
    f.index = out_.attempts.size() - 1;
    return {};
  }

  // Completes the front attempt with its diagnosis, tells the planner, checkpoints the tree.
  util::Result<void> finish(Flight& f) {
    if (f.skip) return {};
    Attempt& a = out_.attempts[f.index];
    if (f.diagnosis.valid()) {
      a.diagnosis = f.diagnosis.get();
      a.cost_usd += f.critic_cost;
      a.wall_s = seconds_since(f.issued);
      if (auto r = d_.store->update_attempt_diagnosis(
              id_, a.number, a.diagnosis.is_null() ? "" : a.diagnosis.dump(), a.cost_usd, a.wall_s);
          !r)
        return std::unexpected(r.error());
    }
    planner_->observe(f.direction, observation_of(a, planner_->space()));
    publish_decisions();
    checkpoint();
    return {};
  }

  // The build workers for this session, when the CLI asked for pre-builds.
  void start_prebuilds() {
    if (d_.prebuild_slots <= 0 || !d_.start_build_worker) return;
    json req = {{"reference", o_.reference}, {"backend", o_.backend},
                {"overrides", o_.overrides}, {"trials", o_.trials},
                {"timeout_s", o_.timeout_s}, {"timing_budget_s", o_.timing_budget_s},
                {"threads", o_.threads},     {"cache_dir", d_.cache_dir}};
    if (o_.no_sandbox) req["no_sandbox"] = true;
    // The evaluation device's architecture, as the main worker sets TORCH_CUDA_ARCH_LIST.
    if (o_.backend != "cpu" && p_.device.is_object() && p_.device.contains("compute_capability") &&
        p_.device["compute_capability"].is_string())
      req["cuda_arch"] = p_.device["compute_capability"];
    prebuild_ =
        std::make_unique<PreBuilder>(d_.start_build_worker, std::move(req), d_.prebuild_slots,
                                     o_.timeout_s, [this](const std::string& text) {
                                       std::lock_guard lock(warn_mutex_);
                                       pending_warnings_.push_back(text);
                                     });
  }

  // Generated candidates not on the device yet go to the build workers (in issue order), their
  // files written now under the name the evaluation will use.
  void offer_prebuilds() {
    {
      std::lock_guard lock(warn_mutex_);  // warnings from the slots' threads, emitted here
      for (auto& w : pending_warnings_) emit("warning", 0, 0, w);
      pending_warnings_.clear();
    }
    for (auto& f : flights_) {
      if (f.offered || f.evaluated || f.on_device || !generation_ready(f)) continue;
      f.offered = true;
      const Generation& g = generated(f);
      if (g.source.empty() || !g.error.empty() || !wants_prebuild(g.source)) continue;
      const auto path =
          o_.out_dir / "attempts" / fmt::format("attempt_{:03d}.py", f.direction.sequence);
      if (!util::write_file(path, g.source)) continue;  // start() reports a write failure
      prebuild_->submit(f.direction.sequence, path.string());
    }
  }

  bool diagnosed(const Flight& f) const {
    return !f.diagnosis.valid() ||
           f.diagnosis.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

  void publish_decisions() {
    for (auto& dc : planner_->take_decisions()) {
      emit("search", dc.intent, 0, dc.kind + ": " + dc.text);
      decisions_log_.push_back(std::move(dc));
    }
  }

  // The search state: in the store (after every evaluation) and OUT/intents.json.
  void checkpoint() {
    json j = planner_->to_json();
    j["session"] = id_;
    j["strategy"] = strategy_.to_json();
    j["problem_class"] = class_;
    j["in_flight"] = in_flight_;
    const double wall = started_ == Clock::time_point{} ? 0.0 : seconds_since(started_);
    j["device_busy_s"] = device_s_;
    j["wall_s"] = wall;
    j["device_busy_fraction"] = wall > 0 ? device_s_ / wall : 0.0;
    // From the first evaluation's start to the last one's end: the pipeline once it is full,
    // without the first generation's wait and the last diagnosis.
    const double span = first_eval_ == Clock::time_point{}
                            ? 0.0
                            : std::chrono::duration<double>(last_eval_end_ - first_eval_).count();
    j["device_busy_fraction_steady"] = span > 0 ? std::min(1.0, device_s_ / span) : 0.0;
    j["evaluations"] = evaluations_;
    j["evaluations_to_best"] = out_.best ? json(out_.attempts[*out_.best].number) : json(nullptr);
    j["decisions"] = static_cast<int>(decisions_log_.size());
    // The report gets the summary; the store and OUT/intents.json the whole tree.
    out_.search = json::object();
    for (const char* k : {"policy", "problem_class", "in_flight", "device_busy_s", "wall_s",
                          "device_busy_fraction", "device_busy_fraction_steady", "evaluations",
                          "evaluations_to_best", "decisions", "space_size", "best_point"})
      out_.search[k] = j[k];
    out_.search["strategy"] = strategy_.id;
    out_.search["intents"] = j["intents"].size();
    out_.search["intents_json"] = (o_.out_dir / "intents.json").string();
    if (prebuild_) out_.search["prebuild"] = prebuild_->summary();
    if (auto w = d_.store->put_search_state(id_, "intents", j.dump()); !w)
      emit("warning", 0, 0, "the intent tree was not saved: " + w.error().message);
    (void)util::write_file(o_.out_dir / "intents.json", j.dump(2) + "\n");
  }

  // Appends the attempt to the history and the store, then updates the session row.
  util::Result<void> record(Attempt a, std::optional<int64_t> candidate_id) {
    store::AttemptRow row;
    row.session = id_;
    row.number = a.number;
    row.generator = a.generator;
    row.candidate_id = candidate_id;
    row.evaluation_id = a.evaluation_id;
    row.path = a.path;
    row.verdict = a.verdict;
    row.correct = a.correct;
    row.speedup = a.speedup;
    row.runtime_us = a.runtime_us;
    row.error = a.error;
    row.cost_usd = a.cost_usd;
    row.params_json = a.params.dump();
    row.description = a.description;
    row.diagnosis_json = a.diagnosis.is_null() ? "" : a.diagnosis.dump();
    row.wall_s = a.wall_s;
    if (auto r = d_.store->insert_attempt(row); !r) return std::unexpected(r.error());
    out_.attempts.push_back(std::move(a));
    consider_best(out_.attempts.size() - 1);
    save_session("running");
    emit("attempt", out_.attempts.back().number, 0, "", &out_.attempts.back());
    return {};
  }

  void consider_best(size_t i) {
    const Attempt& a = out_.attempts[i];
    if (!a.correct || !a.speedup) return;
    if (!out_.best || *a.speedup > *out_.attempts[*out_.best].speedup) out_.best = i;
  }

  void save_session(const std::string& status) {
    session_.status = status;
    session_.cost_usd = spent();
    session_.compile_runtime_us = out_.compile_runtime_us;
    if (out_.best) {
      session_.best_attempt = out_.attempts[*out_.best].number;
      session_.best_speedup = out_.attempts[*out_.best].speedup;
    }
    if (auto r = d_.store->update_session(session_); !r)
      emit("warning", 0, 0, "the session row was not updated: " + r.error().message);
  }

  double spent() const {
    double total = 0;
    for (const auto& a : out_.attempts) total += a.cost_usd;
    if (d_.ledger) total = std::max(total, d_.ledger->totals().cost_usd + resumed_cost_);
    return total;
  }

  bool cancelled() const { return d_.cancel && d_.cancel->load(); }

  void emit(const char* kind, int n, int total, std::string text, const Attempt* a = nullptr) {
    if (!d_.observer) return;
    Event e;
    e.kind = kind;
    e.number = n;
    e.total = total > 0 ? total : total_;
    e.text = std::move(text);
    e.attempt = a;
    if (out_.best) e.best_speedup = out_.attempts[*out_.best].speedup;
    e.cost_usd = spent();
    d_.observer(e);
  }

  static std::string sanitize(const std::string& s) {
    std::string out;
    for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    return out.empty() ? "kernel" : out;
  }

  std::string id_;
  Options o_;
  ProblemContext p_;
  Dependencies d_;
  Outcome out_;
  store::SessionRow session_;
  bool asked_compile_ = false;
  double resumed_cost_ = 0;
  int in_flight_ = 1;
  int total_ = 0;
  std::optional<search::Planner> planner_;
  search::Population population_;
  search::Strategy strategy_;
  std::string class_;
  std::deque<Flight> flights_;
  Flight* device_ = nullptr;  // the flight being evaluated
  std::vector<search::Direction> replay_pending_;
  std::vector<search::Decision> decisions_log_;
  bool exhausted_ = false;
  Clock::time_point started_{};
  double device_s_ = 0;
  Clock::time_point first_eval_{}, last_eval_end_{};
  int evaluations_ = 0;
  std::mutex warn_mutex_;  // before prebuild_: its threads use these until it is destroyed
  std::vector<std::string> pending_warnings_;
  std::unique_ptr<PreBuilder> prebuild_;
};
}  // namespace

util::Result<Outcome> run_session(const std::string& id, const Options& o, ProblemContext problem,
                                  std::vector<Attempt> resumed, Dependencies deps) {
  Loop loop(id, o, std::move(problem), std::move(resumed), std::move(deps));
  return loop.run();
}

}  // namespace ok::optimize
