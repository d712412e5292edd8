#include "store/migrations.hpp"

#include <array>
#include <string>

namespace ok::store {

namespace {
constexpr std::string_view kV1 = R"sql(
CREATE TABLE problems (
  id INTEGER PRIMARY KEY,
  source_hash TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  path TEXT,
  level INTEGER,
  problem_number INTEGER,
  source TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE TABLE candidates (
  id INTEGER PRIMARY KEY,
  source_hash TEXT NOT NULL UNIQUE,
  source TEXT NOT NULL,
  path TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE TABLE evaluations (
  id INTEGER PRIMARY KEY,
  problem_id INTEGER NOT NULL REFERENCES problems(id),
  candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  session TEXT,
  verdict TEXT NOT NULL,
  compiled INTEGER NOT NULL,
  correct INTEGER NOT NULL,
  valid INTEGER NOT NULL,
  speedup REAL,
  runtime_median_us REAL,
  ref_runtime_median_us REAL,
  max_abs_error REAL,
  max_rel_error REAL,
  backend TEXT NOT NULL,
  device TEXT NOT NULL,
  flags TEXT NOT NULL,
  reasons TEXT NOT NULL,
  overrides TEXT NOT NULL,
  versions TEXT NOT NULL,
  result TEXT NOT NULL,
  wall_s REAL NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX evaluations_problem ON evaluations(problem_id);
CREATE INDEX evaluations_session ON evaluations(session);
)sql";

constexpr std::string_view kV2 = R"sql(
CREATE TABLE llm_calls (
  id INTEGER PRIMARY KEY,
  session TEXT,
  purpose TEXT NOT NULL,
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  base_url TEXT NOT NULL,
  stream INTEGER NOT NULL,
  request TEXT NOT NULL,
  response TEXT,
  stop_reason TEXT,
  status TEXT NOT NULL,
  error_kind TEXT,
  error TEXT,
  http_status INTEGER,
  attempts INTEGER NOT NULL,
  input_tokens INTEGER,
  output_tokens INTEGER,
  cached_input_tokens INTEGER,
  usage_estimated INTEGER NOT NULL,
  cost_usd REAL,
  cost_estimated INTEGER NOT NULL,
  latency_ms REAL NOT NULL,
  ttft_ms REAL,
  started_at TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX llm_calls_session ON llm_calls(session);
)sql";

// Optimisation sessions and their attempts (docs/store.md, "Version 3").
constexpr std::string_view kV3 = R"sql(
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  problem_id INTEGER REFERENCES problems(id),
  reference TEXT NOT NULL,
  name TEXT NOT NULL,
  backend TEXT NOT NULL,
  model TEXT NOT NULL,
  mode TEXT NOT NULL,
  status TEXT NOT NULL,
  options TEXT NOT NULL,
  out_dir TEXT NOT NULL,
  best_attempt INTEGER,
  best_speedup REAL,
  compile_runtime_us REAL,
  cost_usd REAL NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE TABLE attempts (
  id INTEGER PRIMARY KEY,
  session TEXT NOT NULL REFERENCES sessions(id),
  number INTEGER NOT NULL,
  generator TEXT NOT NULL,
  candidate_id INTEGER REFERENCES candidates(id),
  evaluation_id INTEGER REFERENCES evaluations(id),
  path TEXT,
  verdict TEXT NOT NULL,
  correct INTEGER NOT NULL,
  speedup REAL,
  runtime_us REAL,
  error TEXT,
  cost_usd REAL NOT NULL DEFAULT 0,
  params TEXT NOT NULL,
  description TEXT NOT NULL,
  diagnosis TEXT,
  wall_s REAL NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  UNIQUE(session, number)
);
)sql";

// Version 4: `openkernel baseline` figures, newest per (problem, device, backend) wins.
constexpr std::string_view kV4 = R"sql(
CREATE TABLE baselines (
  id INTEGER PRIMARY KEY,
  problem_id INTEGER NOT NULL REFERENCES problems(id),
  device TEXT NOT NULL,
  backend TEXT NOT NULL,
  method TEXT NOT NULL,
  eager_us REAL,
  compile_us REAL,
  compile_reason TEXT NOT NULL,
  threads INTEGER NOT NULL,
  versions TEXT NOT NULL,
  result TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX baselines_problem ON baselines(problem_id, device, backend);
)sql";

// Version 5: the search's state: per session its intent tree (kind "intents"), and under the
// scope "global" the strategy population (kind "strategies"). Rewritten after every evaluation.
constexpr std::string_view kV5 = R"sql(
CREATE TABLE search_state (
  scope TEXT NOT NULL,
  kind TEXT NOT NULL,
  json TEXT NOT NULL,
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  PRIMARY KEY (scope, kind)
);
)sql";

// Version 6: the engine's events, appended as the observer hears them, so that other processes
// can follow a session live. AUTOINCREMENT: an id is never reused, so a follower's last id is a
// cursor (a merge re-inserts a session's events under new ids: docs/store.md).
constexpr std::string_view kV6 = R"sql(
CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session TEXT NOT NULL,
  time TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  kind TEXT NOT NULL,
  number INTEGER NOT NULL DEFAULT 0,
  total INTEGER NOT NULL DEFAULT 0,
  text TEXT NOT NULL DEFAULT '',
  payload TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_session ON events(session, id);
)sql";

// Version 7: the skill library (docs/skills.md): each skill once, by an id that hashes what it
// says; its evidence one row per (skill, session), so that learners and merges only add rows.
constexpr std::string_view kV7 = R"sql(
CREATE TABLE skills (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  provenance TEXT NOT NULL,
  signature TEXT NOT NULL,
  title TEXT NOT NULL DEFAULT '',
  text TEXT NOT NULL,
  action TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE TABLE skill_evidence (
  id INTEGER PRIMARY KEY,
  skill_id TEXT NOT NULL REFERENCES skills(id) ON DELETE CASCADE,
  session TEXT NOT NULL,
  role TEXT NOT NULL,
  outcome TEXT NOT NULL,
  rank INTEGER NOT NULL DEFAULT 0,
  attempt INTEGER,
  speedup_before REAL,
  speedup_after REAL,
  hardware TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  UNIQUE (skill_id, session)
);
CREATE INDEX skill_evidence_session ON skill_evidence(session);
)sql";

constexpr std::array<std::string_view, 7> kMigrations = {kV1, kV2, kV3, kV4, kV5, kV6, kV7};
}  // namespace

std::span<const std::string_view> migrations() {
  return kMigrations;
}

util::Result<int> migrate(Database& db) {
  const int latest = static_cast<int>(kMigrations.size());
  // Read the version and apply every pending migration inside one write transaction, so that
  // processes creating the same new database at once serialise instead of failing.
  if (auto r = db.exec("BEGIN IMMEDIATE;"); !r) return std::unexpected(r.error());
  auto rollback = [&](util::Error e) -> util::Result<int> {
    (void)db.exec("ROLLBACK;");
    return std::unexpected(std::move(e));
  };
  int version = 0;
  {
    auto st = db.prepare("PRAGMA user_version");
    if (!st) return rollback(st.error());
    if (auto r = st->step(); !r) return rollback(r.error());
    version = static_cast<int>(st->col_int(0));
  }
  if (version > latest)
    return rollback({util::ErrorKind::kBadInput,
                     "the database has schema version " + std::to_string(version) +
                         ", newer than this openkernel understands (" + std::to_string(latest) +
                         "); upgrade openkernel or pass another --db"});
  for (int v = version; v < latest; ++v) {
    std::string sql =
        std::string(kMigrations[v]) + "\nPRAGMA user_version = " + std::to_string(v + 1) + ";";
    if (auto r = db.exec(sql); !r) return rollback(r.error());
  }
  if (auto r = db.exec("COMMIT;"); !r) return rollback(r.error());
  return latest;
}

}  // namespace ok::store
