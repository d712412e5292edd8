// The dashboard's read-only view of the store: every figure the web page shows, as JSON
// (docs/dashboard.md, "JSON API", lists the keys). Only SELECTs: nothing here writes, so the
// dashboard can watch a store another process is writing (WAL readers never block the writer).
//
// The SQL lives here rather than in store.cpp because it is the dashboard's own projection (joins
// of sessions, attempts and evaluations, JSON fields pulled out in SQL so a 500-attempt session is
// not parsed whole); it runs through Store::db(). Queries borrow the Store; not thread-safe (the
// server serialises them).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "store/store.hpp"
#include "util/error.hpp"

namespace ok::dashboard {

class Queries {
 public:
  explicit Queries(store::Store& store) : store_(store) {}

  // Every session, newest first: id, name, backend, model, mode, status, best attempt and
  // speedup, cost, attempt count, problem class and strategy (from the intent tree), times.
  util::Result<nlohmann::json> sessions();
  // One session with its attempts (verdict, speedup, runtime, flags, cost, params, intent,
  // diagnosis, roofline figures) and the device's roofs; nullopt when there is no such session.
  util::Result<std::optional<nlohmann::json>> session(const std::string& id);
  // The candidate source of attempt `number`: {number, path, source, language}; nullopt when the
  // session or attempt does not exist. An attempt that never produced a source (generation
  // failed) answers with "source": null and the reason.
  util::Result<std::optional<nlohmann::json>> attempt_source(const std::string& id, int number);
  // The session's intent tree as stored (docs/search.md), under "tree" (null when the session has
  // none yet); nullopt when there is no such session.
  util::Result<std::optional<nlohmann::json>> intents(const std::string& id);
  // Events of the session above id `after`, oldest first, at most `limit`, with the last id seen
  // (`after` when none); nullopt when there is no such session.
  util::Result<std::optional<nlohmann::json>> events(const std::string& id, int64_t after,
                                                     int limit);
  // The strategy population with, per strategy and problem class, problems, correctness rate,
  // win rate (problems with a gain), geometric mean speedup, cost and frontier membership.
  util::Result<nlohmann::json> strategies();
  // Across sessions: per session its model, backend, problem, cost and best speedup, and its
  // attempts as [number, seconds since the session began, best-so-far speedup, cost so far].
  util::Result<nlohmann::json> aggregates();

  // Whether session `id` exists.
  util::Result<bool> has_session(const std::string& id);

 private:
  store::Store& store_;
};

// The figures the roofline, utilisation and experiment panels read, from an evaluation's
// `roofline` object (docs/evaluation.md) and the attempt's runtime: intensity (FLOP/byte),
// achieved FLOP/s and bytes/s, their fractions of the roofs, the floor and speed-of-light
// fraction. Null when the evaluation has no roofline or no runtime.
nlohmann::json roofline_figures(const nlohmann::json& roofline, std::optional<double> runtime_us);

// What the utilisation and roofline panels show of an evaluation's `profile` (docs/profiling.md)
// when a tier above basic measured its kernels (`kernel_metrics`): tier, tool ("ncu", "proton"),
// kernel count, the dominant (longest) kernel's name, the kernels' total duration, DRAM and SM
// throughput and achieved occupancy (% of peak, the kernels' duration-weighted mean; null when
// no kernel reports one) and the measured roofline position: FLOPs and DRAM bytes summed over the
// kernels that report both, their intensity and rates over those kernels' durations (null when
// none does). Null without kernel metrics.
nlohmann::json profile_figures(const nlohmann::json& profile);

// The language the dashboard highlights a candidate in, from its path and text: "python" for
// Python files (Triton and load_inline sources included: embedded C++/CUDA is found by the page),
// "cuda" for .cu/.cuh, "cpp" for C++ files.
std::string source_language(const std::string& path, const std::string& source);

}  // namespace ok::dashboard
