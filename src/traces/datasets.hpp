// The processed tables of a trace export (docs/traces.md, "Processed tables"), built from trace
// rows (trace.hpp): training pairs in the chat `messages` layout, strategy x problem class
// outcomes, and whether a diagnosis's suggested move was followed by a gain. Pure functions.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "traces/parquet.hpp"

namespace ok::traces {

// One pair per kept attempt with something for the assistant to say: the recorded prompt and
// reply, or (attempts without a recorded model call) a prompt made from the reference and the
// candidate's code as the reply. `reference_source`: session id -> the problem's source.
std::vector<nlohmann::json> training_pairs(
    const std::vector<nlohmann::json>& rows,
    const std::map<std::string, std::string>& reference_source);
const Schema& training_pairs_schema();

// One row per (strategy, problem class) over whole sessions.
std::vector<nlohmann::json> strategy_rewards(const std::vector<nlohmann::json>& session_rows);
const Schema& strategy_rewards_schema();

// One row per diagnosed attempt that a later attempt of its session followed.
std::vector<nlohmann::json> critic_accuracy(const std::vector<nlohmann::json>& session_rows);
const Schema& critic_accuracy_schema();

}  // namespace ok::traces
