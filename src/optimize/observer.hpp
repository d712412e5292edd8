// The engine's events, typed: the orchestrator (run_session) tells an Observer what happens and
// never prints. The CLI's printer renders the events on stderr; StoreObserver appends each one to
// the store's `events` table (docs/store.md) so that other processes (a terminal UI's watch, the
// dashboard) can follow a session while it runs; FanOut hands each event to several observers.
//
// Threads: model_text and model_retry come from the generation threads (several at once when
// generations are in flight), every other method from the session's thread in order; so an
// observer that handles the model's text must be thread-safe. Methods must not throw.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/store.hpp"

namespace ok::optimize {

struct Attempt;

// The running figures that come with most events.
struct Standing {
  int total = 0;                       // the session's iteration limit
  std::optional<double> best_speedup;  // of the best correct attempt so far
  double cost_usd = 0;                 // spent so far, model calls included
  double elapsed_s = 0;                // wall seconds since the session (re)started its search
  int recorded = 0;                    // attempts recorded so far, resumed ones included
};

// What a session runs: told once, when it starts.
struct SessionInfo {
  std::string session, problem, backend;
  std::string model;   // "builtin" for the builtin generator, else the registry's name
  std::string device;  // what the worker reports, e.g. "NVIDIA H200", or "cpu"
  std::string what;    // "NAME on BACKEND with MODEL"
};

class Observer {
 public:
  virtual ~Observer() = default;
  // The session began (or resumed).
  virtual void started(const Standing& s, const SessionInfo& info) = 0;
  // The search's set-up: policy, strategy, problem class, generations in flight, template points.
  virtual void strategy(const Standing& s, const std::string& text) = 0;
  // Attempt `number`'s generation was issued; `what` is the intent's title or the generator.
  virtual void generating(const Standing& s, int number, const std::string& what) = 0;
  // A piece of the model's reply to attempt `number`'s generation (the whole reply at once when the
  // call does not stream).
  virtual void model_text(int number, std::string_view text) = 0;
  // The model call of attempt `number` is retried: the text delivered so far is void.
  virtual void model_retry(int number, const std::string& why) = 0;
  // Attempt `number` went to the device.
  virtual void evaluating(const Standing& s, int number, const std::string& description) = 0;
  // Attempt `a` was recorded: evaluated, or settled without an evaluation (its verdict says why).
  virtual void attempt_finished(const Standing& s, const Attempt& a) = 0;
  // The critic's diagnosis of attempt `a` arrived, after attempt_finished: a.diagnosis (the
  // bottleneck, evidence, suggested actions), with the attempt's final cost and wall time. Not
  // told for attempts the critic did not diagnose.
  virtual void diagnosed(const Standing& s, const Attempt& a) = 0;
  // A decision of the search: the planner's (kind intent_added, intent_succeeded, stagnation,
  // ...; `intent` its id, 0 the root), or the session's own (replayed, strategy_mutated,
  // exhausted; intent -1).
  virtual void search_decision(const Standing& s, int intent, const std::string& kind,
                               const std::string& text) = 0;
  virtual void warning(const std::string& text) = 0;
  // The session was paused, resumed or asked to stop (Control): `state` is "paused", "running"
  // or "stopping".
  virtual void control(const Standing& s, const std::string& state) = 0;
  // The session stopped; `reason` is Outcome::stop_reason.
  virtual void stopped(const Standing& s, const std::string& reason) = 0;
};

// Hands every event to each of its observers, in the order given. Borrows them.
class FanOut final : public Observer {
 public:
  explicit FanOut(std::vector<Observer*> observers) : observers_(std::move(observers)) {}
  void started(const Standing& s, const SessionInfo& info) override;
  void strategy(const Standing& s, const std::string& text) override;
  void generating(const Standing& s, int number, const std::string& what) override;
  void model_text(int number, std::string_view text) override;
  void model_retry(int number, const std::string& why) override;
  void evaluating(const Standing& s, int number, const std::string& description) override;
  void attempt_finished(const Standing& s, const Attempt& a) override;
  void diagnosed(const Standing& s, const Attempt& a) override;
  void search_decision(const Standing& s, int intent, const std::string& kind,
                       const std::string& text) override;
  void warning(const std::string& text) override;
  void control(const Standing& s, const std::string& state) override;
  void stopped(const Standing& s, const std::string& reason) override;

 private:
  std::vector<Observer*> observers_;
};

// Renders every event as its row of the store's events table (docs/store.md, "events": kind,
// number, total, text and the JSON payload) and hands the row to append(): the one rendering that
// StoreObserver writes and the Python API passes to its callback. append() is called from the
// threads the events come from (model_text from several at once): it must be thread-safe.
class RowObserver : public Observer {
 public:
  void started(const Standing& s, const SessionInfo& info) final;
  void strategy(const Standing& s, const std::string& text) final;
  void generating(const Standing& s, int number, const std::string& what) final;
  void model_text(int number, std::string_view text) final;
  void model_retry(int number, const std::string& why) final;
  void evaluating(const Standing& s, int number, const std::string& description) final;
  void attempt_finished(const Standing& s, const Attempt& a) final;
  void diagnosed(const Standing& s, const Attempt& a) final;
  void search_decision(const Standing& s, int intent, const std::string& kind,
                       const std::string& text) final;
  void warning(const std::string& text) final;
  void control(const Standing& s, const std::string& state) final;
  void stopped(const Standing& s, const std::string& reason) final;

 protected:
  virtual void append(store::EventRow row) = 0;
};

// Appends every event of session `session` to the store's events table, on a connection of its
// own, serialised by its mutex (so it is thread-safe). The event kinds are the method names; the
// columns and payloads are in docs/store.md. A failed write (a store busy past its timeout, say)
// loses that event only: error() says how many were lost and why, and the session goes on.
class StoreObserver final : public RowObserver {
 public:
  static util::Result<std::unique_ptr<StoreObserver>> open(const std::filesystem::path& db,
                                                           std::string session);

  // Why events were lost, with how many; nullopt while every write succeeded.
  std::optional<util::Error> error() const;

 private:
  StoreObserver(store::Store store, std::string session)
      : store_(std::move(store)), session_(std::move(session)) {}
  void append(store::EventRow row) override;

  store::Store store_;
  std::string session_;
  mutable std::mutex mu_;
  std::optional<util::Error> error_;  // the first failed write's
  int lost_ = 0;                      // events whose write failed
};

}  // namespace ok::optimize
