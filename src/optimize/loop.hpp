// The orchestrator's loop behind run_session (session.hpp has the contract): internal to
// src/optimize.
//
// One Loop runs one session on the caller's thread. Each attempt is a Flight: its generation runs
// on a thread of its own; the device evaluates one flight at a time, in issue order; the critic
// diagnoses on another thread. An attempt is recorded in the store as soon as it is settled
// (evaluated, or failed before the device) and concluded in issue order once diagnosed: the
// planner observes it and the search state is checkpointed. loop.cpp holds the flights' path,
// loop_search.cpp the planner's set-up, replay and the strategy population's lesson.
#pragma once

#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "eval/evaluator.hpp"
#include "optimize/observer.hpp"
#include "optimize/prebuild.hpp"
#include "optimize/session.hpp"
#include "search/strategy.hpp"
#include "skills/retrieve.hpp"

namespace ok::optimize {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One attempt on its way: generated on its own thread, then evaluated, then diagnosed.
struct Flight {
  search::Direction direction;
  std::future<Generation> generation;
  std::optional<Generation> generated;  // taken from `generation` once it is ready
  Clock::time_point issued;
  Attempt attempt;
  bool settled = false;            // recorded: evaluated, or failed before the device (verdict set)
  bool nothing_to_record = false;  // the generator had nothing left: no attempt
  std::string stop;                // a stop reason this attempt gives (speed_of_light, ...)
  bool offered = false;            // considered for a pre-build
  bool on_device = false;
  std::future<util::Result<nlohmann::json>> evaluation;
  Clock::time_point evaluation_started;
  std::optional<int64_t> candidate_id;
  std::future<nlohmann::json> diagnosis;
  double critic_cost = 0;
  size_t index = 0;  // into the session's attempts, once recorded
  // Deep profiles (loop_profile.cpp): the evaluation's result (with its profile), the diagnosis
  // once taken from `diagnosis` to see whether the critic asked for a profile, whether that
  // question was settled, and what the second diagnosis (with the profile) cost.
  nlohmann::json result;
  std::optional<nlohmann::json> diagnosis_taken;
  bool profile_asked = false;
  double critic_cost_again = 0;
};

// What serve_profile_request did for the front flight.
enum class ProfileStep {
  kNone,     // nothing asked (or not granted): the flight may conclude
  kWaiting,  // granted, but the device is busy: the flight waits, nothing new goes to the device
  kStarted,  // profiled; the critic diagnoses again with the profile
};

// Why an intent failed, as the strategy population's lessons record it (search::Outcome::failures).
enum class FailureReason {
  kNoGain,      // correct, but no better than the best: serialised "no_gain"
  kStagnation,  // the planner saw no progress: serialised "stagnation"
  kIntentNote,  // any other setback: serialised as the intent's note
};
struct Failure {
  FailureReason reason;
  std::string note;  // kIntentNote's text
};
// The text a failure is recorded as.
std::string failure_entry(const Failure& f);
// The failure of a failed or pruned intent; nullopt for any other status.
std::optional<Failure> failure_of(const search::Intent& intent);

class Loop {
 public:
  Loop(std::string session_id, const Options& options, ProblemContext problem,
       std::vector<Attempt> history, Dependencies deps);
  util::Result<Outcome> run();

 private:
  // loop.cpp: the flights.
  util::Result<std::string> drive();
  util::Result<bool> step(std::string& stopping);
  void abandon_undispatched();
  void finish_session(const std::string& stopping);
  bool may_issue() const;  // the issue rule, live and on replay
  void issue_directions();
  void start_generation(const search::Direction& d);
  util::Result<void> take_generation(Flight& f, bool device_stopped);
  void send_to_device(Flight& f);
  util::Result<void> take_evaluation(Flight& f);
  util::Result<void> take_evaluator_error(Flight& f, const util::Error& error);
  util::Result<void> record_attempt(Flight& f);
  util::Result<void> conclude_attempt(Flight& f);
  bool diagnosed(const Flight& f) const;
  void start_prebuilds();
  void offer_prebuilds();
  void consider_best(size_t i);
  void save_session(const std::string& status);
  double spent() const;
  bool cancelled() const;
  Standing standing() const;
  SessionInfo session_info() const;
  void tell_control_state();

  // loop_profile.cpp: deep profiles of the best and of candidates the critic asks about.
  bool profiles_possible() const;
  eval::EvalRequest request_for(const Attempt& a) const;
  bool profile_into(Attempt& a, nlohmann::json& result, const std::string& why);
  bool wants_best_profile(const Attempt& a) const;
  ProfileStep serve_profile_request(Flight& f);
  bool final_profile_allowed() const;
  bool device_time_left() const;
  nlohmann::json recorded_profile(const Attempt& a) const;
  void profile_final_best();
  // loop_search.cpp: the planner and the population.
  util::Result<void> prepare_search();
  util::Result<void> choose_strategy();
  void replay_attempts();
  // `deferred`: where an unreadable population's warning goes instead of the observer (inside a
  // store transaction no observer may be told anything: the StoreObserver would wait on the lock
  // this thread holds).
  util::Result<search::Population> load_population(std::vector<std::string>* deferred = nullptr);
  void update_population();
  std::string stop_reason_now() const;
  void publish_decisions();
  void checkpoint();

  // loop_skills.cpp: the skill library.
  util::Result<void> choose_skills(std::vector<nlohmann::json>& points);
  // The skills fed become the world model's seeded intents (before the replay).
  util::Result<void> seed_intents(const std::vector<nlohmann::json>& points);
  void learn_skills();

  std::string session_id_;
  Options options_;
  ProblemContext problem_;
  Dependencies deps_;
  FanOut silent_{std::vector<Observer*>{}};  // tells nobody
  Observer& observer_;                       // deps_.observer, or silent_
  Outcome outcome_;
  store::SessionRow session_row_;
  bool compile_baseline_asked_ = false;
  double resumed_cost_ = 0;
  int in_flight_ = 1;
  int total_ = 0;
  std::optional<search::Planner> planner_;
  bool planner_exhausted_ = false;
  search::Population population_;
  search::Strategy strategy_;
  std::string problem_class_;
  std::deque<Flight> flights_;
  Flight* on_device_ = nullptr;                         // the flight being evaluated
  std::vector<search::Direction> replayed_directions_;  // issued before a kill, never recorded
  std::vector<search::Decision> decisions_;
  Clock::time_point started_at_{};
  std::string control_state_ = "running";  // as last told to the observer
  double device_busy_s_ = 0;
  Clock::time_point first_evaluation_start_{}, last_evaluation_end_{};
  int evaluations_ = 0;
  int critic_profiles_ = 0;  // deep profiles granted to the critic's requests
  // Before prebuilder_: its threads report warnings here until it is destroyed.
  std::mutex prebuild_warnings_mutex_;
  std::vector<std::string> prebuild_warnings_;
  std::unique_ptr<PreBuilder> prebuilder_;
  skills::Signature skills_signature_;
  // What the session was fed and, once finished, what each did and what it taught.
  nlohmann::json skills_report_ = nullptr;
  std::string skills_note_;  // the skills fed, told once the session has started
};

}  // namespace ok::optimize
