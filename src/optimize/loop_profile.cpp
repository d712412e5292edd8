// Deep profiles inside optimize (docs/profiling.md, "In optimize"): the worker's `profile` op
// (eval::profile_candidate) on the session's device, between evaluations, for
//   - a new best, before its diagnosis, with --mode deep (each improvement);
//   - the session's best at its end, when it has no deep profile yet (any mode), after a search
//     that ran its course (iterations, exhausted, speed_of_light) with device time left;
//   - an attempt whose diagnosis asks for one (`"profile_request": true`), at most
//     kCriticProfiles per session: the critic then diagnoses it again with the profile.
// None starts once --budget-device-s is spent (device_time_left).
// Only correct candidates on a GPU backend (or the CPU with OPENKERNEL_PROFILE_ON_CPU=1, for the
// tests' recorded stand-in for ncu) are profiled; the worker caches profiles by source hash, so a
// candidate is profiled at most once. A profile taken after its attempt was recorded replaces the
// `profile` of the evaluation row's result JSON. A profile never fails the session: a worker error
// is a warning, a profiler's limit a flag in the profile (the critic quotes it as evidence).
#include <fmt/core.h>

#include <cstdlib>

#include "optimize/loop.hpp"
#include "profile/profile.hpp"

namespace ok::optimize {

using nlohmann::json;

namespace {

// Deep profiles the critic may ask for per session: a few in fast mode, more in deep mode.
int critic_profile_cap(const std::string& mode) {
  return mode == "deep" ? 8 : 2;
}

std::string tier_of(const json& result) {
  if (!result.is_object() || !result.contains("profile") || !result["profile"].is_object())
    return "";
  const json& t = result["profile"].value("tier", json());
  return t.is_string() ? t.get<std::string>() : "";
}

bool asks_for_profile(const json& diagnosis) {
  return diagnosis.is_object() && diagnosis.contains("profile_request") &&
         diagnosis["profile_request"].is_boolean() && diagnosis["profile_request"].get<bool>();
}

// "tier deep, cached, flags profiler_missing" for the session's decision line.
std::string profile_note(const json& p) {
  std::string out = "tier " + p.value("tier", std::string("?"));
  if (p.value("cached", false)) out += ", cached";
  std::string flags;
  if (p.contains("flags") && p["flags"].is_array())
    for (const auto& f : p["flags"])
      if (f.is_object() && f.contains("flag") && f["flag"].is_string())
        flags += (flags.empty() ? "" : ", ") + f["flag"].get<std::string>();
  return flags.empty() ? out : out + ", flags " + flags;
}

}  // namespace

bool Loop::profiles_possible() const {
  if (options_.backend != "cpu") return true;
  const char* on_cpu = std::getenv("OPENKERNEL_PROFILE_ON_CPU");
  return on_cpu && std::string(on_cpu) == "1";
}

eval::EvalRequest Loop::request_for(const Attempt& a) const {
  eval::EvalRequest req;
  req.reference = options_.reference;
  req.candidate = a.path;
  req.backend = options_.backend;
  req.limits = options_.limits;
  req.overrides = options_.overrides;
  req.cache_dir = deps_.cache_dir;
  return req;
}

// Profiles attempt `a` (deep) on the device and merges the tier's keys into `result`'s profile;
// false when the worker gave no profile (a warning says why).
bool Loop::profile_into(Attempt& a, json& result, const std::string& why) {
  eval::EvalRequest req = request_for(a);
  req.profile = "deep";
  const auto t0 = Clock::now();
  auto p = eval::profile_candidate(*deps_.worker, req, deps_.cancel);
  const double seconds = seconds_since(t0);
  device_busy_s_ += seconds;
  if (!p) {
    observer_.warning(fmt::format("the deep profile of attempt {} ({}) failed: {}", a.number, why,
                                  p.error().message));
    return false;
  }
  if (!result.contains("profile") || !result["profile"].is_object())
    result["profile"] = json::object();
  result["profile"].update(*p);
  // Only the summary's profile changes: its times, flags and roofline (which the report and the
  // sweep's TSV read) and what the loop added (compile_runtime_us) stand.
  if (!a.summary.is_object()) a.summary = json::object();
  a.summary["profile"] = summarize_result(json{{"profile", result["profile"]}})["profile"];
  // An attempt already recorded: its evaluation row gets the profile too (the dashboard's
  // measured panels read it); one not yet recorded is stored with it.
  if (a.evaluation_id)
    if (auto w = deps_.store->update_evaluation_profile(*a.evaluation_id, result["profile"].dump());
        !w)
      observer_.warning(fmt::format("the deep profile of attempt {} was not stored: {}", a.number,
                                    w.error().message));
  observer_.search_decision(
      standing(), -1, "deep_profile",
      fmt::format("attempt {} ({}): {} in {:.1f} s", a.number, why, profile_note(*p), seconds));
  return true;
}

// Whether --budget-device-s leaves device time: evaluations and profiles both spend it (a deep
// profile costs seconds of ncu's replays), so no profile starts once it is spent.
bool Loop::device_time_left() const {
  return !options_.budget_device_s || device_busy_s_ < *options_.budget_device_s;
}

bool Loop::wants_best_profile(const Attempt& a) const {
  if (options_.mode != "deep" || !a.correct || !a.speedup || !profiles_possible() || cancelled() ||
      !device_time_left())
    return false;
  return !outcome_.best || *a.speedup > *outcome_.attempts[*outcome_.best].speedup;
}

ProfileStep Loop::serve_profile_request(Flight& f) {
  if (f.profile_asked || f.nothing_to_record) return ProfileStep::kNone;
  if (!f.diagnosis_taken) {
    if (!f.diagnosis.valid()) return ProfileStep::kNone;
    f.diagnosis_taken = f.diagnosis.get();
  }
  Attempt& a = outcome_.attempts[f.index];
  if (!asks_for_profile(*f.diagnosis_taken) || !a.correct || !profiles_possible() || cancelled() ||
      tier_of(f.result) == "deep" || critic_profiles_ >= critic_profile_cap(options_.mode) ||
      !device_time_left()) {
    f.profile_asked = true;  // not granted: the first diagnosis stands
    return ProfileStep::kNone;
  }
  if (on_device_) return ProfileStep::kWaiting;
  f.profile_asked = true;
  ++critic_profiles_;
  if (!profile_into(a, f.result, "asked by the critic")) return ProfileStep::kNone;
  f.diagnosis_taken.reset();
  Critic* critic = deps_.critic;
  f.diagnosis = std::async(std::launch::async,
                           [critic, p = problem_, a, r = f.result, cost = &f.critic_cost_again] {
                             return critic->diagnose(p, a, r, *cost);
                           });
  return ProfileStep::kStarted;
}

// The final profile only after a search that ran its course, with device time left: not after
// a lost worker (its restart would allocate a host just to profile), nor past a time budget.
bool Loop::final_profile_allowed() const {
  const std::string& why = outcome_.stop_reason;
  if (why != "iterations" && why != "exhausted" && why != "speed_of_light") return false;
  return device_time_left();
}

// The stored profile of `a`'s evaluation (full, with the basic tier's tables), else the one its
// summary keeps.
json Loop::recorded_profile(const Attempt& a) const {
  if (a.evaluation_id)
    if (auto text = deps_.store->evaluation_result(*a.evaluation_id); text && *text) {
      json r = json::parse(**text, nullptr, false);
      if (r.is_object() && r.contains("profile") && r["profile"].is_object()) return r["profile"];
    }
  return a.summary.is_object() ? a.summary.value("profile", json::object()) : json::object();
}

// The session's best gets a deep profile when it has none (fast mode; resumed sessions): its
// diagnosis gains the profile's evidence (the heuristic reading: no model call), recorded.
void Loop::profile_final_best() {
  if (!outcome_.best || !profiles_possible() || cancelled() || !final_profile_allowed()) return;
  Attempt& b = outcome_.attempts[*outcome_.best];
  if (b.path.empty() || tier_of(b.summary) == "deep") return;
  json r = {{"profile", recorded_profile(b)}};
  if (!profile_into(b, r, "the session's best")) return;
  if (!b.diagnosis.is_object()) return;
  profile::refine_diagnosis(b.diagnosis, r["profile"]);
  if (auto w = deps_.store->update_attempt_diagnosis(session_id_, b.number, b.diagnosis.dump(),
                                                     b.cost_usd, b.wall_s);
      !w)
    observer_.warning("the best attempt's diagnosis was not updated: " + w.error().message);
  else
    observer_.diagnosed(standing(), b);
}

}  // namespace ok::optimize
