// The run as the terminal UI sees it. RunModel is an optimize::Observer: `kernel-code optimize`
// hands it to the engine (live), `kernel-code watch` feeds it the session's persisted events
// through optimize::replay_event; either way it keeps what the panels show and snapshot() copies
// that out for the UI thread, which renders the copy without holding any lock.
//
// Thread safety: every method may be called from any thread (model_text comes from the
// generation threads while the session's thread sends the rest and the UI thread snapshots).
// What an attempt carries beyond the event's fields is read from optimize::Attempt: `flags`,
// `ref_runtime_us` (eager) and `compile_runtime_us` (torch.compile) from its evaluation summary,
// `intent` from its params, the bottleneck and suggestions from the critic's diagnosis.
// A resumed session's earlier attempts are not events of the new run: a live front end may feed
// them through attempt_finished before the run starts (started() restarts the ETA's count).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "optimize/observer.hpp"

namespace ok::tui {

// One recorded attempt, as the experiment log, the trajectory and the diff read it.
struct AttemptView {
  int number = 0;
  std::string verdict;  // correct, incorrect, compile_error, ..., generation_failed
  bool correct = false;
  std::optional<double> speedup, runtime_us;
  std::vector<std::string> flags;  // the evaluation's rules that fired
  double cost_usd = 0, wall_s = 0;
  std::string description, path, generator, error;
  std::optional<double> eager_us, compile_us;  // the reference's times in this evaluation
  std::optional<int64_t> evaluation_id;
  std::string intent;      // params.intent, or the `generating` event's title
  std::string bottleneck;  // the critic's, empty when none
};

// What the agents said about one attempt: the generator's streamed text and the critic's verdict.
struct AgentMessage {
  int number = 0;
  std::string title;  // the `generating` event's: the intent's title or the generator
  std::string state;  // generating, evaluating, done
  std::string text;   // the model's reply so far (its last kMaxAgentText bytes)
  int retries = 0;
  std::string retry_reason;              // the last retry's
  std::string diagnosis;                 // the critic's bottleneck and evidence, one paragraph
  std::vector<std::string> suggestions;  // the critic's, best first
};

struct Decision {
  int intent = 0;  // the planner's intent id (0 the root), -1 for the session's own
  std::string kind, text;
};

struct Snapshot {
  optimize::SessionInfo info;
  std::string strategy;                // the search's set-up line
  optimize::Standing standing;         // the latest event's
  std::vector<AttemptView> attempts;   // in the order recorded
  std::vector<AgentMessage> agents;    // one per attempt issued, in issue order (the last 64)
  std::vector<Decision> decisions;     // the last 64
  std::vector<std::string> warnings;   // the last 16
  std::string control = "running";     // running, paused, stopping
  std::optional<std::string> stopped;  // the stop reason once the session stopped
  double elapsed_s = 0;  // the session's wall seconds, advanced to the snapshot's time while live
  int finished_this_run = 0;  // attempts recorded since the last `started` (for the ETA)
  uint64_t version = 0;       // changes with every event

  // The attempt numbered `number`, null when none.
  const AttemptView* attempt(int number) const;
  // The best correct attempt (highest speedup), null when none.
  const AttemptView* best() const;
  // Numbers of the attempts issued and not yet recorded, oldest first.
  std::vector<int> in_flight() const;
};

inline constexpr size_t kMaxAgentText = 16 * 1024;

class RunModel final : public optimize::Observer {
 public:
  Snapshot snapshot() const;
  // Changes with every event: the UI redraws when it differs from the last frame's.
  uint64_t version() const;

  void started(const optimize::Standing& s, const optimize::SessionInfo& info) override;
  void control(const optimize::Standing& s, const std::string& state) override;
  void strategy(const optimize::Standing& s, const std::string& text) override;
  void generating(const optimize::Standing& s, int number, const std::string& what) override;
  void model_text(int number, std::string_view text) override;
  void model_retry(int number, const std::string& why) override;
  void evaluating(const optimize::Standing& s, int number, const std::string& description) override;
  void attempt_finished(const optimize::Standing& s, const optimize::Attempt& a) override;
  void diagnosed(const optimize::Standing& s, const optimize::Attempt& a) override;
  void search_decision(const optimize::Standing& s, int intent, const std::string& kind,
                       const std::string& text) override;
  void warning(const std::string& text) override;
  void stopped(const optimize::Standing& s, const std::string& reason) override;

 private:
  using Clock = std::chrono::steady_clock;
  void stand(const optimize::Standing& s);  // under mu_
  AgentMessage& agent(int number);          // under mu_: created when new

  mutable std::mutex mu_;
  Snapshot s_;
  Clock::time_point standing_at_{};  // when s_.standing.elapsed_s was current
};

// The view of an engine Attempt (the fields the header lists).
AttemptView attempt_view(const optimize::Attempt& a);

}  // namespace ok::tui
