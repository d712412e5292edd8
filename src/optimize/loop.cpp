// The orchestrator's flights: issue, generate, evaluate, record, conclude (loop.hpp).
#include "optimize/loop.hpp"

#include <fmt/core.h>

#include <cctype>
#include <thread>

#include "eval/evaluator.hpp"
#include "eval/record.hpp"
#include "util/paths.hpp"

namespace ok::optimize {

using nlohmann::json;
using util::ErrorKind;
using util::fail;

namespace {

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

std::optional<double> median_of(const json& r, const char* key) {
  if (!r.contains(key)) return std::nullopt;
  const json& v = r[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_object() && v.contains("median") && v["median"].is_number())
    return v["median"].get<double>();
  return std::nullopt;
}

std::string file_stem(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return out.empty() ? "kernel" : out;
}

std::filesystem::path attempt_path(const Options& o, int number) {
  return o.out_dir / "attempts" / fmt::format("attempt_{:03d}.py", number);
}

}  // namespace

Loop::Loop(std::string session_id, const Options& options, ProblemContext problem,
           std::vector<Attempt> history, Dependencies deps)
    : session_id_(std::move(session_id)),
      options_(options),
      problem_(std::move(problem)),
      deps_(std::move(deps)),
      observer_(deps_.observer ? *deps_.observer : silent_) {
  outcome_.session = session_id_;
  outcome_.attempts = std::move(history);
  outcome_.device = problem_.device;
  for (size_t i = 0; i < outcome_.attempts.size(); ++i) consider_best(i);
  for (const auto& a : outcome_.attempts) resumed_cost_ += a.cost_usd;
}

util::Result<Outcome> Loop::run() {
  auto row = deps_.store->find_session(session_id_);
  if (!row) return std::unexpected(row.error());
  if (!*row) return fail(ErrorKind::kInternal, "session " + session_id_ + " is not in the store");
  session_row_ = **row;
  if (session_row_.compile_runtime_us)
    outcome_.compile_runtime_us = session_row_.compile_runtime_us;
  total_ = options_.iterations > 0 ? options_.iterations : default_iterations(options_.mode);
  in_flight_ = options_.in_flight > 0
                   ? options_.in_flight
                   : default_in_flight(options_.mode, options_.model == "builtin");
  std::filesystem::create_directories(options_.out_dir / "attempts");
  if (auto r = prepare_search(); !r) return std::unexpected(r.error());
  observer_.started(standing(), session_info());
  observer_.strategy(
      standing(),
      fmt::format("{} search, strategy {} for {} problems, {} in flight{}",
                  search::policy_name(planner_->policy()), strategy_.id, problem_class_, in_flight_,
                  planner_->space().empty()
                      ? ""
                      : fmt::format(", {} template points", planner_->space().size())));
  if (!skills_note_.empty()) observer_.search_decision(standing(), -1, "skills", skills_note_);
  start_prebuilds();
  started_at_ = Clock::now();
  auto stopping = drive();
  if (!stopping) return std::unexpected(stopping.error());
  finish_session(*stopping);
  return outcome_;
}

// Runs the flights until none is left; returns why no new work was issued ("" for none).
// While a Control holds the session paused, nothing new is issued (the replayed directions
// included) and the loop waits for the flights, or for the pause to end, polling.
util::Result<std::string> Loop::drive() {
  std::string stopping;
  while (true) {
    if (stopping.empty()) stopping = stop_reason_now();
    if (stopping == "stopped" && cancelled()) stopping = "interrupted";  // Ctrl-C during a stop
    tell_control_state();
    const bool held = stopping.empty() && deps_.control && deps_.control->paused();
    if (!held) {
      for (auto& d : replayed_directions_) start_generation(d);
      replayed_directions_.clear();
    }
    if (stopping.empty() && !held) issue_directions();
    publish_decisions();
    if (flights_.empty() && !held) break;
    if (flights_.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    auto progressed = step(stopping);
    if (!progressed) return std::unexpected(progressed.error());
    if (!*progressed) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return stopping;
}

// One pass over the flights; true when something moved. `stopping` takes the first stop reason
// an attempt gives.
util::Result<bool> Loop::step(std::string& stopping) {
  auto stop_at = [&](const Flight& f) {
    if (!f.stop.empty() && stopping.empty()) stopping = f.stop;
  };
  const bool drop = stopping == "interrupted" || stopping == "error";
  const bool device_stopped = stopping == "wall_time" || stopping == "device_time";
  if ((drop || device_stopped) && prebuilder_) prebuilder_->stop();  // nothing more to evaluate
  if (drop) {
    abandon_undispatched();
    if (flights_.empty()) return true;
  }
  bool progressed = false;
  // The device's result: record the attempt at once and start its diagnosis.
  if (on_device_ &&
      on_device_->evaluation.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    Flight& f = *on_device_;
    on_device_ = nullptr;
    if (auto r = take_evaluation(f); !r) return std::unexpected(r.error());
    stop_at(f);
    progressed = true;
  }
  // A diagnosed front teaches the planner, which may issue the next generation at once.
  if (flights_.front().settled && diagnosed(flights_.front())) {
    Flight& f = flights_.front();
    // The critic may ask for a deep profile first: it waits for a free device (nothing new goes
    // to the device meanwhile), then the critic diagnoses again with the profile.
    const ProfileStep asked = drop ? ProfileStep::kNone : serve_profile_request(f);
    if (asked == ProfileStep::kWaiting) return progressed;
    if (asked == ProfileStep::kStarted) return true;
    if (auto r = conclude_attempt(f); !r) return std::unexpected(r.error());
    stop_at(f);
    flights_.pop_front();
    return true;
  }
  // The device is free: the oldest generated attempt goes next (issue order).
  if (!on_device_) {
    for (auto& f : flights_) {
      if (f.settled || f.on_device) continue;
      if (generation_ready(f)) {
        if (auto r = take_generation(f, device_stopped || drop); !r)
          return std::unexpected(r.error());
        stop_at(f);
        progressed = true;
      }
      break;
    }
  }
  // What still waits for the device is built meanwhile (one that went to it just now is not).
  if (prebuilder_ && !drop && !device_stopped) offer_prebuilds();
  return progressed;
}

// Ctrl-C: attempts not on the device yet are abandoned (their directions replay on resume); the
// one on the device comes back cancelled and is kept.
void Loop::abandon_undispatched() {
  while (!flights_.empty() && !flights_.back().settled && !flights_.back().on_device) {
    if (flights_.back().generation.valid()) flights_.back().generation.wait();
    flights_.pop_back();
  }
}

void Loop::finish_session(const std::string& stopping) {
  outcome_.stop_reason = !stopping.empty()    ? stopping
                         : planner_exhausted_ ? "exhausted"
                                              : "iterations";
  // A session stopped through its Control ends short of its search: resumable, and not a lesson
  // for the strategy population (nor is an interrupted one).
  outcome_.status = outcome_.stop_reason == "interrupted" ? "interrupted"
                    : outcome_.stop_reason == "stopped"   ? "stopped"
                                                          : "finished";
  outcome_.cost_usd = spent();
  if (prebuilder_) prebuilder_->stop();
  if (outcome_.best) {
    const Attempt& b = outcome_.attempts[*outcome_.best];
    outcome_.best_path = options_.out_dir / ("best_" + file_stem(problem_.name) + ".py");
    if (auto src = util::read_file(b.path)) (void)util::write_file(outcome_.best_path, *src);
  }
  if (outcome_.status == "finished") profile_final_best();
  if (outcome_.status == "finished") {
    update_population();
    learn_skills();
  }
  checkpoint();
  save_session(outcome_.status);
  observer_.stopped(standing(), outcome_.stop_reason);
}

// Proposal n is issued once results 1..n-K are known (K in flight), within the iteration limit.
bool Loop::may_issue() const {
  return planner_->issued() < planner_->observed() + in_flight_ && planner_->issued() < total_;
}

void Loop::issue_directions() {
  while (!planner_exhausted_ && may_issue()) {
    auto d = planner_->next();
    if (!d) {
      planner_exhausted_ = true;
      break;
    }
    start_generation(*d);
  }
}

void Loop::start_generation(const search::Direction& d) {
  Flight f;
  f.direction = d;
  f.issued = Clock::now();
  observer_.generating(standing(), d.sequence, d.title.empty() ? deps_.generator->name() : d.title);
  Generator* gen = deps_.generator;
  // The generation sees the observed attempts (1..n-K), whatever else has been recorded
  // meanwhile, so its prompt does not depend on timing.
  const auto seen =
      std::min<size_t>(static_cast<size_t>(planner_->observed()), outcome_.attempts.size());
  std::vector<Attempt> history(outcome_.attempts.begin(),
                               outcome_.attempts.begin() + static_cast<ptrdiff_t>(seen));
  f.generation = std::async(std::launch::async, [gen, p = problem_, history = std::move(history), d,
                                                 observer = &observer_]() {
    llm::FunctionSink text(
        [&](std::string_view piece) { observer->model_text(d.sequence, piece); },
        [&](int, const util::Error& why) { observer->model_retry(d.sequence, why.message); });
    return gen->next(p, history, &d, &text);
  });
  flights_.push_back(std::move(f));
}

// Takes a generated attempt: a failed generation (or, with the device stopped by a time budget
// or Ctrl-C, a candidate kept unevaluated) is recorded at once; a candidate goes to the device.
util::Result<void> Loop::take_generation(Flight& f, bool device_stopped) {
  Generation g = std::move(generated(f));
  if (prebuilder_) prebuilder_->withdraw(f.direction.sequence);
  Attempt& a = f.attempt;
  a.number = f.direction.sequence;
  a.generator = deps_.generator->name();
  a.params = g.params;
  if (f.direction.intent >= 0) {
    const auto& i = planner_->intents()[static_cast<size_t>(f.direction.intent)];
    a.params["intent"] = {{"id", i.id}, {"title", i.title}};
  }
  a.description = g.description;
  a.cost_usd = g.cost_usd;
  if (g.source.empty() && g.error.empty()) {
    f.settled = true;
    f.nothing_to_record = true;  // the generator has nothing left
    f.stop = "exhausted";
    return {};
  }
  if (!g.error.empty()) {
    a.verdict = g.verdict.empty() ? "generation_failed" : g.verdict;
    a.error = g.error;
    if (g.exhausted) f.stop = a.verdict == "unsupported" ? "unsupported" : "exhausted";
    if (cancelled()) f.stop = "interrupted";
    return record_attempt(f);
  }
  a.path = attempt_path(options_, a.number).string();
  if (auto w = util::write_file(a.path, g.source); !w) return std::unexpected(w.error());
  if (device_stopped) {
    a.verdict = "not_evaluated";
    a.error = "the search stopped before this candidate was evaluated; it is kept at " + a.path;
    return record_attempt(f);
  }
  send_to_device(f);
  return {};
}

void Loop::send_to_device(Flight& f) {
  const Attempt& a = f.attempt;
  observer_.evaluating(standing(), a.number, a.description);
  eval::EvalRequest req = request_for(a);
  req.spare = true;  // the session's next evaluation starts without waiting for a process
  // The torch.compile baseline once per session, on the GPU (docs/optimize.md).
  if (options_.compile_baseline && options_.backend != "cpu" && !outcome_.compile_runtime_us &&
      !compile_baseline_asked_) {
    req.compile_baseline = true;
    compile_baseline_asked_ = true;
  }
  f.evaluation_started = Clock::now();
  if (first_evaluation_start_ == Clock::time_point{})
    first_evaluation_start_ = f.evaluation_started;
  // The device's own thread: the loop keeps diagnosing, learning and issuing meanwhile.
  f.evaluation =
      std::async(std::launch::async, [worker = deps_.worker, req, cancel = deps_.cancel] {
        return eval::evaluate(*worker, req, cancel);
      });
  f.on_device = true;
  on_device_ = &f;
}

// The device's result for `f`: the evaluation recorded, the attempt recorded, the diagnosis
// started.
util::Result<void> Loop::take_evaluation(Flight& f) {
  auto result = f.evaluation.get();
  f.on_device = false;
  last_evaluation_end_ = Clock::now();
  device_busy_s_ +=
      std::chrono::duration<double>(last_evaluation_end_ - f.evaluation_started).count();
  ++evaluations_;
  if (!result) return take_evaluator_error(f, result.error());
  Attempt& a = f.attempt;
  json& r = *result;
  a.verdict = r.value("verdict", "unknown");
  a.correct = r.value("correct", false) && r.value("valid", false);
  if (a.correct && r["speedup"].is_number()) a.speedup = r["speedup"].get<double>();
  a.runtime_us = median_of(r, "runtime_us");
  // --mode deep: a new best is profiled before its diagnosis, which then reads the profile.
  if (wants_best_profile(a)) profile_into(a, r, "a new best");
  if (auto e = median_of(r, "ref_runtime_us"); e && a.correct) outcome_.eager_runtime_us = e;
  if (auto c = median_of(r, "compile_runtime_us")) {
    outcome_.compile_runtime_us = c;
    const json& series = r["compile_runtime_us"];
    if (series.contains("stderr") && series["stderr"].is_number())
      outcome_.compile_runtime_stderr_us = series["stderr"].get<double>();
  }
  a.error = failure_text(r);
  a.summary = summarize_result(r);
  // The torch.compile time the session knows (timed once per session, on the GPU), for observers.
  if (outcome_.compile_runtime_us) a.summary["compile_runtime_us"] = *outcome_.compile_runtime_us;
  r["versions"] = deps_.worker->hello().value("versions", json::object());
  auto ids = eval::record_evaluation(
      *deps_.store, {problem_.name, options_.reference, options_.level, options_.number}, a.path, r,
      session_id_);
  if (!ids) return std::unexpected(ids.error());
  a.evaluation_id = ids->evaluation_id;
  f.candidate_id = ids->candidate_id;
  f.result = r;
  if (!cancelled()) {
    Critic* critic = deps_.critic;
    f.diagnosis =
        std::async(std::launch::async, [critic, p = problem_, a, r, cost = &f.critic_cost] {
          return critic->diagnose(p, a, r, *cost);
        });
  }
  double sol = r.contains("roofline") && r["roofline"].is_object()
                   ? r["roofline"].value("fraction_of_speed_of_light", 0.0)
                   : 0.0;
  if (a.correct && sol >= options_.stop_at_sol) f.stop = "speed_of_light";
  return record_attempt(f);
}

// An evaluation that did not come back: interrupted (kept unevaluated), or the worker's failure
// (recorded; the worker is restarted when it can be).
util::Result<void> Loop::take_evaluator_error(Flight& f, const util::Error& error) {
  Attempt& a = f.attempt;
  if (error.kind == ErrorKind::kCancelled) {
    f.stop = "interrupted";
    a.verdict = "not_evaluated";
    a.error = "interrupted during its evaluation; the candidate is kept at " + a.path;
    return record_attempt(f);
  }
  a.verdict = "evaluator_error";
  a.error = error.message;
  if (error.kind == ErrorKind::kRemoteLost) {
    // The remote host was lost twice: an evaluation row flagged remote_lost (docs/remote.md).
    auto ids = eval::record_lost_evaluation(
        *deps_.store, {problem_.name, options_.reference, options_.level, options_.number}, a.path,
        request_for(a), error.message, session_id_);
    if (!ids) return std::unexpected(ids.error());
    a.evaluation_id = ids->evaluation_id;
    f.candidate_id = ids->candidate_id;
  }
  if (!deps_.restart_worker) {
    f.stop = "error";
    return record_attempt(f);
  }
  // The old worker goes first: a SLURM allocation it holds is released (or cancelled) before
  // its successor asks for one, which could otherwise queue behind it (docs/remote.md).
  deps_.worker->stop();
  auto w = deps_.restart_worker();
  if (!w && w.error().kind == ErrorKind::kCancelled) {
    f.stop = "interrupted";  // Ctrl-C while the successor started (or waited for its allocation)
    return record_attempt(f);
  }
  if (!w) {
    outcome_.error = "the evaluation worker could not be restarted: " + w.error().message;
    f.stop = "error";
    return record_attempt(f);
  }
  *deps_.worker = std::move(*w);
  return record_attempt(f);
}

// Records a settled attempt at once (so kill -9 loses at most what is in flight) and updates the
// session row; its diagnosis follows in conclude_attempt().
util::Result<void> Loop::record_attempt(Flight& f) {
  f.settled = true;
  Attempt& a = f.attempt;
  a.wall_s = seconds_since(f.issued);
  const store::AttemptRow row = attempt_row(session_id_, a, f.candidate_id);
  if (auto r = deps_.store->insert_attempt(row); !r) return std::unexpected(r.error());
  outcome_.attempts.push_back(a);
  f.index = outcome_.attempts.size() - 1;
  consider_best(f.index);
  save_session("running");
  observer_.attempt_finished(standing(), outcome_.attempts.back());
  return {};
}

// Completes the front attempt with its diagnosis, tells the planner, checkpoints the tree.
util::Result<void> Loop::conclude_attempt(Flight& f) {
  if (f.nothing_to_record) return {};
  Attempt& a = outcome_.attempts[f.index];
  if (f.diagnosis.valid() || f.diagnosis_taken) {
    a.diagnosis = f.diagnosis_taken ? *f.diagnosis_taken : f.diagnosis.get();
    a.cost_usd += f.critic_cost + f.critic_cost_again;
    a.wall_s = seconds_since(f.issued);
    if (auto r = deps_.store->update_attempt_diagnosis(
            session_id_, a.number, a.diagnosis.is_null() ? "" : a.diagnosis.dump(), a.cost_usd,
            a.wall_s);
        !r)
      return std::unexpected(r.error());
    if (!a.diagnosis.is_null()) observer_.diagnosed(standing(), a);
  }
  planner_->observe(f.direction, observation_of(a, planner_->space()));
  publish_decisions();
  checkpoint();
  return {};
}

bool Loop::diagnosed(const Flight& f) const {
  return !f.diagnosis.valid() ||
         f.diagnosis.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// The build workers for this session, when the CLI asked for pre-builds.
void Loop::start_prebuilds() {
  if (deps_.prebuild_slots <= 0 || !deps_.start_build_worker) return;
  const Options& o = options_;
  json req = {{"reference", o.reference},        {"backend", o.backend},
              {"overrides", o.overrides},        {"trials", o.limits.trials},
              {"timeout_s", o.limits.timeout_s}, {"timing_budget_s", o.limits.timing_budget_s},
              {"threads", o.limits.threads},     {"cache_dir", deps_.cache_dir}};
  if (o.limits.no_sandbox) req["no_sandbox"] = true;
  // The evaluation device's architecture, as the main worker sets TORCH_CUDA_ARCH_LIST.
  const json& device = problem_.device;
  if (o.backend != "cpu" && device.is_object() && device.contains("compute_capability") &&
      device["compute_capability"].is_string())
    req["cuda_arch"] = device["compute_capability"];
  prebuilder_ =
      std::make_unique<PreBuilder>(deps_.start_build_worker, std::move(req), deps_.prebuild_slots,
                                   o.limits.timeout_s, [this](const std::string& text) {
                                     std::lock_guard lock(prebuild_warnings_mutex_);
                                     prebuild_warnings_.push_back(text);
                                   });
}

// Generated candidates not on the device yet go to the build workers (in issue order), their
// files written now under the name the evaluation will use.
void Loop::offer_prebuilds() {
  {
    std::lock_guard lock(prebuild_warnings_mutex_);  // from the slots' threads, told here
    for (auto& w : prebuild_warnings_) observer_.warning(w);
    prebuild_warnings_.clear();
  }
  for (auto& f : flights_) {
    if (f.offered || f.settled || f.on_device || !generation_ready(f)) continue;
    f.offered = true;
    const Generation& g = generated(f);
    if (g.source.empty() || !g.error.empty() || !wants_prebuild(g.source)) continue;
    const auto path = attempt_path(options_, f.direction.sequence);
    if (!util::write_file(path, g.source)) continue;  // take_generation reports a write failure
    prebuilder_->submit(f.direction.sequence, path.string());
  }
}

void Loop::consider_best(size_t i) {
  const Attempt& a = outcome_.attempts[i];
  if (!a.correct || !a.speedup) return;
  if (!outcome_.best || *a.speedup > *outcome_.attempts[*outcome_.best].speedup) outcome_.best = i;
}

void Loop::save_session(const std::string& status) {
  session_row_.status = status;
  session_row_.cost_usd = spent();
  session_row_.compile_runtime_us = outcome_.compile_runtime_us;
  if (outcome_.best) {
    session_row_.best_attempt = outcome_.attempts[*outcome_.best].number;
    session_row_.best_speedup = outcome_.attempts[*outcome_.best].speedup;
  }
  if (auto r = deps_.store->update_session(session_row_); !r)
    observer_.warning("the session row was not updated: " + r.error().message);
}

double Loop::spent() const {
  double total = 0;
  for (const auto& a : outcome_.attempts) total += a.cost_usd;
  if (deps_.ledger) total = std::max(total, deps_.ledger->totals().cost_usd + resumed_cost_);
  return total;
}

bool Loop::cancelled() const {
  return deps_.cancel && deps_.cancel->load();
}

Standing Loop::standing() const {
  Standing s;
  s.total = total_;
  if (outcome_.best) s.best_speedup = outcome_.attempts[*outcome_.best].speedup;
  s.cost_usd = spent();
  s.elapsed_s = started_at_ == Clock::time_point{} ? 0.0 : seconds_since(started_at_);
  s.recorded = static_cast<int>(outcome_.attempts.size());
  return s;
}

SessionInfo Loop::session_info() const {
  const json& d = problem_.device;
  std::string device = d.is_object() && d.contains("name") && d["name"].is_string()
                           ? d["name"].get<std::string>()
                           : (options_.backend == "cpu" ? "cpu" : "GPU");
  return {.session = session_id_,
          .problem = problem_.name,
          .backend = options_.backend,
          .model = options_.model,
          .device = std::move(device),
          .what = fmt::format("{} on {} with {}", problem_.name, options_.backend, options_.model)};
}

// Tells the observer when the Control's state changed since the last time it was told.
void Loop::tell_control_state() {
  if (!deps_.control) return;
  std::string now = deps_.control->state();
  if (now == control_state_) return;
  control_state_ = std::move(now);
  observer_.control(standing(), control_state_);
}

}  // namespace ok::optimize
