// The panels of the terminal UI's screen (internal to src/tui; render.cpp lays them out). Each
// draws its frame (a box whose title says what it shows, highlighted when it has the focus) into
// `r` and its content inside; every one of them stays readable down to 80x24's rectangles.
#pragma once

#include <string_view>

#include "tui/canvas.hpp"
#include "tui/keys.hpp"
#include "tui/model.hpp"
#include "tui/render.hpp"

namespace ok::tui::panels {

// Draws the box around `r` with `title` (the panel's number prefixed, the focus highlighted) and
// returns the rectangle inside it.
Rect frame(Canvas& c, Rect r, Panel p, std::string_view title, const UiState& ui);

void agent(const Snapshot& s, UiState& ui, Canvas& c, Rect r);
void trajectory(const Snapshot& s, const UiState& ui, Canvas& c, Rect r);
void profiling(const Snapshot& s, const UiState& ui, const Details& d, Canvas& c, Rect r);
void log(const Snapshot& s, const UiState& ui, Canvas& c, Rect r);
void diff(const Snapshot& s, UiState& ui, const Details& d, Canvas& c, Rect r);
// The full-screen attempt's facts: verdict, times, flags, error, the critic's diagnosis.
void attempt_info(const Snapshot& s, const UiState& ui, Canvas& c, Rect r);

}  // namespace ok::tui::panels
