// The terminal UI's screen: render() draws a Snapshot of the run into a Canvas of any size from
// 80x24 up: the status bar, the five panels (agent, trajectory, profiling, experiment log, kernel
// diff; docs/kernel-code.md says what each shows), the key line or filter prompt, and the help
// overlay or the full-screen attempt when the UiState asks for them. Pure: the same inputs draw
// the same cells (the render tests compare them with tests/cpp/data/tui/*.txt).
//
// What the events do not carry comes through Details, which the caller supplies: the attempt's
// kernel source and its evaluation's result JSON (the profile and roofline). The terminal layer
// reads them from the attempt's path and the store; either function may return nullopt.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tui/canvas.hpp"
#include "tui/keys.hpp"
#include "tui/model.hpp"

namespace ok::tui {

struct Details {
  std::function<std::optional<std::string>(const AttemptView&)> source;
  std::function<std::optional<nlohmann::json>(int64_t evaluation_id)> evaluation;
};

// Draws the whole screen into `canvas` (cleared first). Scroll offsets in `ui` beyond what there
// is to show are pulled back to the last page, so that the next key scrolls visibly.
void render(const Snapshot& s, UiState& ui, const Details& d, Canvas& canvas);

}  // namespace ok::tui
