// The persisted form of the engine's events (docs/store.md, "events"): how StoreObserver writes an
// event's payload and how replay_event reads it back, in one place so that the two never drift.
// Internal to src/optimize. Pure functions; the readers accept payloads of older engines (missing
// keys keep their defaults).
#pragma once

#include <nlohmann/json.hpp>

#include "optimize/agents.hpp"
#include "optimize/observer.hpp"

namespace ok::optimize::payload {

// The running figures: best_speedup, cost_usd, elapsed_s, recorded (`total` is the row's column).
nlohmann::json standing(const Standing& s);
Standing standing_from(int total, const nlohmann::json& p);

nlohmann::json info(const SessionInfo& i);
SessionInfo info_from(const nlohmann::json& j);

// The attempt as recorded, with the evaluation's flags, the reference's eager and torch.compile
// times (from its summary) and the attempt's params.
nlohmann::json attempt(const Attempt& a);
Attempt attempt_from(const nlohmann::json& j);

// The critic's diagnosis of an attempt as the `diagnosed` event carries it: {diagnosis, cost_usd,
// wall_s}; bottleneck() is the event's text (the diagnosis's "bottleneck", or "").
nlohmann::json diagnosis(const Attempt& a);
std::string bottleneck(const Attempt& a);
// The attempt (number and those fields) back from the payload's `diagnosis` object.
Attempt diagnosis_from(int number, const nlohmann::json& j);

}  // namespace ok::optimize::payload
