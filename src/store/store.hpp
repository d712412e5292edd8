// The OpenKernel store: one SQLite database (WAL) holding problems, candidates and evaluations
// (and, as later migrations add them, sessions, LLM calls, intent trees and strategies, and the
// engine's events).
//
// Store owns its connection; use one Store per thread (another process or thread opens its own,
// e.g. to follow a session's events while it runs). Rows are written as they happen so that a
// crash never loses what was already recorded. Every SQL statement of the project lives in
// src/store. Schema: docs/store.md.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "store/sqlite.hpp"

namespace ok::store {

struct ProblemRow {
  std::string source_hash;
  std::string name;
  std::string path;
  std::optional<int> level;
  std::optional<int> problem_number;
  std::string source;
};

struct CandidateRow {
  std::string source_hash;
  std::string source;
  std::string path;
};

struct EvaluationRow {
  int64_t problem_id = 0;
  int64_t candidate_id = 0;
  std::optional<std::string> session;
  std::string verdict;
  bool compiled = false, correct = false, valid = false;
  std::optional<double> speedup, runtime_median_us, ref_runtime_median_us;
  std::optional<double> max_abs_error, max_rel_error;
  std::string backend, device;
  std::string flags_json = "[]", reasons_json = "[]", overrides_json = "{}", versions_json = "{}";
  std::string result_json = "{}";
  double wall_s = 0;
};

// One `openkernel optimize` session (docs/store.md, version 3).
struct SessionRow {
  std::string id;
  std::optional<int64_t> problem_id;
  std::string reference, name, backend, model, mode;
  std::string status;               // running, finished, interrupted, failed
  std::string options_json = "{}";  // everything --resume needs to continue the same search
  std::string out_dir;
  std::optional<int64_t> best_attempt;
  std::optional<double> best_speedup, compile_runtime_us;
  double cost_usd = 0;
};

// A session as `kernel-code sessions` lists it: the row's figures and its attempts so far.
struct SessionSummary {
  std::string id, problem, backend, model, mode;
  std::string status;                  // running, finished, interrupted, stopped, failed
  std::string started_at, updated_at;  // UTC, ISO 8601 with milliseconds
  int attempts = 0;                    // recorded so far
  std::optional<double> best_speedup;
  double cost_usd = 0;
  std::string out_dir;
};

// One generate-evaluate-diagnose step of a session; written as soon as it ends.
struct AttemptRow {
  std::string session;
  int number = 0;
  std::string generator;  // builtin or the model's name
  std::optional<int64_t> candidate_id, evaluation_id;
  std::string path;
  std::string verdict;  // the evaluator's verdict, or generation_failed
  bool correct = false;
  std::optional<double> speedup, runtime_us;
  std::string error;
  double cost_usd = 0;
  std::string params_json = "{}";
  std::string description;
  std::string diagnosis_json;  // empty: none
  double wall_s = 0;
};

// `openkernel baseline`: the reference's eager and torch.compile times on one device (version 4).
struct BaselineRow {
  int64_t problem_id = 0;
  std::string device, backend, method;  // method: events or cuda_graph
  std::optional<double> eager_us, compile_us;
  std::string compile_reason;  // why compile_us is empty
  int threads = 0;
  std::string versions_json = "{}", result_json = "{}";
};

// One LLM call as the llm_calls table holds it (version 2; docs/llm.md). The text is stored as
// given: the caller redacts it. Empty strings of the nullable text columns are stored as NULL.
struct LlmCallRow {
  std::string session;  // nullable
  std::string purpose, provider, model, base_url;
  bool stream = false;
  std::string request_json;
  std::optional<std::string> response;
  std::string stop_reason;        // nullable
  std::string status;             // ok, error
  std::string error_kind, error;  // nullable
  std::optional<int64_t> http_status;
  int attempts = 0;
  std::optional<int64_t> input_tokens, output_tokens, cached_input_tokens;
  bool usage_estimated = false;
  std::optional<double> cost_usd;
  bool cost_estimated = false;
  double latency_ms = 0;
  std::optional<double> ttft_ms;
  std::string started_at;  // UTC, ISO 8601 with milliseconds
};

// One event the engine told its observer (version 6; docs/store.md lists the kinds).
struct EventRow {
  int64_t id = 0;  // set by the store: increasing, never reused
  std::string session;
  std::string time;  // set by the store: UTC, ISO 8601 with milliseconds
  std::string kind;
  int number = 0, total = 0;
  std::string text;
  std::string payload_json = "{}";
};

// What the trace export reads of a session (docs/traces.md): the row, when it started, its
// problem (the session's, else its first evaluation's), its intent tree's JSON (empty: none) and
// the device's name from its `started` event (empty: none).
struct TraceSessionRow {
  SessionRow row;
  std::string created_at;
  std::optional<ProblemRow> problem;
  std::string intents_json;
  std::string device_name;
};

// An LLM call of a session as the trace export reads it. `attempt_number`: the attempt it served,
// as its recorded request says (`attempt`, docs/llm.md); calls recorded before it have none.
struct TraceLlmCall {
  int64_t id = 0;
  std::optional<int> attempt_number;
  std::string purpose, model, request_json, status, started_at;
  std::optional<std::string> response;
  std::optional<int64_t> input_tokens, output_tokens;
  std::optional<double> cost_usd;
  double latency_ms = 0;
};

// A skill of the library (version 7; docs/skills.md): JSON columns as text, checked by src/skills.
struct SkillRow {
  std::string id, kind, provenance;
  std::string signature_json = "{}";
  std::string title, text;
  std::string action_json = "{}";
  std::string created_at;  // empty on insert: now
};

// One session's evidence about one skill (version 7): unique on (skill_id, session).
struct SkillEvidenceRow {
  std::string skill_id, session;
  std::string role;     // source, used
  std::string outcome;  // helped, failed, neutral, pending
  int rank = 0;
  std::optional<int64_t> attempt;
  std::optional<double> speedup_before, speedup_after;
  std::string hardware;
  std::string created_at;  // empty on insert: now
};

class Store {
 public:
  // The default location: $XDG_DATA_HOME/openkernel/openkernel.db.
  static std::filesystem::path default_path();
  static util::Result<Store> open(const std::filesystem::path& path);

  util::Result<int64_t> upsert_problem(const ProblemRow& p);
  util::Result<int64_t> upsert_candidate(const CandidateRow& c);
  util::Result<int64_t> insert_evaluation(const EvaluationRow& e);
  util::Result<int64_t> count_evaluations();

  util::Result<void> insert_session(const SessionRow& s);
  // Updates status, best attempt/speedup, compile runtime and cost (and updated_at).
  util::Result<void> update_session(const SessionRow& s);
  util::Result<std::optional<SessionRow>> find_session(const std::string& id);
  // The sessions, newest first (by start), at most `limit` (0: all).
  util::Result<std::vector<SessionSummary>> sessions(int limit = 0);
  util::Result<int64_t> insert_attempt(const AttemptRow& a);
  // The critic's diagnosis arrives after the attempt was recorded (the attempt is written as soon
  // as it is evaluated): sets it with the attempt's final cost and wall time.
  util::Result<void> update_attempt_diagnosis(const std::string& session, int number,
                                              const std::string& diagnosis_json, double cost_usd,
                                              double wall_s);
  util::Result<std::vector<AttemptRow>> attempts(const std::string& session);
  // The worker's full result JSON of evaluation `id` (nullopt when there is no such row).
  util::Result<std::optional<std::string>> evaluation_result(int64_t id);
  // A deep profile taken after evaluation `id` was recorded (optimize's final and critic-asked
  // profiles): replaces the `profile` key of its result JSON with `profile_json` (an object),
  // nothing else; no such row is not an error.
  util::Result<void> update_evaluation_profile(int64_t id, const std::string& profile_json);

  // The trace export's reads (store_traces.cpp): every session, oldest first; a candidate's
  // source; a session's LLM calls in the order they were recorded.
  util::Result<std::vector<TraceSessionRow>> trace_sessions();
  util::Result<std::optional<std::string>> candidate_source(int64_t id);
  util::Result<std::vector<TraceLlmCall>> trace_llm_calls(const std::string& session);

  // Copies every session of the store at `other` (with its attempts, evaluations, LLM calls,
  // events and the problems and candidates they use, and their intent trees, and every skill with
  // its evidence: skills are matched by id, evidence by (skill, session)) into this one,
  // replacing earlier copies of the same sessions, in one transaction. Returns how many sessions
  // were copied. Used to gather the per-task stores of a SLURM sweep; `other` is migrated to this
  // version first.
  util::Result<int> merge_sessions(const std::filesystem::path& other);

  util::Result<int64_t> insert_baseline(const BaselineRow& b);
  // The newest baseline of a problem (by source hash) on a device and backend, if any.
  util::Result<std::optional<BaselineRow>> latest_baseline(const std::string& source_hash,
                                                           const std::string& device,
                                                           const std::string& backend);

  // The search's state (version 5): `scope` is a session id or "global"; `kind` is "intents"
  // (a session's intent tree) or "strategies" (the population). put_ replaces the earlier value.
  util::Result<void> put_search_state(const std::string& scope, const std::string& kind,
                                      const std::string& json_text);
  util::Result<std::optional<std::string>> search_state(const std::string& scope,
                                                        const std::string& kind);

  // Records one LLM call; returns its row id.
  util::Result<int64_t> insert_llm_call(const LlmCallRow& c);

  // Appends an event (its id and time are set here); returns its id.
  util::Result<int64_t> append_event(const EventRow& e);
  // The events of `session` with an id above `after_id`, oldest first, at most `limit`: a
  // follower passes the last id it saw. Rows are visible to other connections once written.
  util::Result<std::vector<EventRow>> events_since(const std::string& session, int64_t after_id,
                                                   int limit = 1000);

  // The skill library (version 7; store_skills.cpp). insert_skill keeps an existing row of the
  // same id (ids hash the content) and says whether it added one. put_skill_evidence inserts or
  // replaces the row of (skill_id, session), keeping its created_at. skill_evidence filters by
  // skill and session when given (empty: all). delete_skills removes skills with their evidence
  // in a transaction of its own (not to be called inside transaction()).
  util::Result<bool> insert_skill(const SkillRow& s);
  util::Result<std::vector<SkillRow>> skill_rows();
  util::Result<void> put_skill_evidence(const SkillEvidenceRow& e);
  util::Result<std::vector<SkillEvidenceRow>> skill_evidence(const std::string& skill_id = "",
                                                             const std::string& session = "");
  util::Result<int> delete_skills(const std::vector<std::string>& ids);

  // Runs `body` inside one write transaction (BEGIN IMMEDIATE: writers of other connections wait
  // for it): committed when `body` returns a value, rolled back when it returns an error, which is
  // returned. `body` uses this Store; it must not start a transaction of its own.
  util::Result<void> transaction(const std::function<util::Result<void>()>& body);

  // The raw connection, for tests and schema checks; code outside src/store calls the methods.
  Database& db() { return db_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  Store(Database db, std::filesystem::path path) : db_(std::move(db)), path_(std::move(path)) {}
  Database db_;
  std::filesystem::path path_;
};

}  // namespace ok::store
