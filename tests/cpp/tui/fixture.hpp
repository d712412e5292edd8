// A recorded-looking session for the terminal UI's tests: a RunModel fed the events of 14 Triton
// attempts on an H200 (correct, slow, wrong, failing to compile, rejected, timed out, one
// generation failure, two in flight, one streaming the model's text), the kernel sources and the
// evaluations' result JSON the Details hand the panels, and golden-file comparison.
#pragma once

#include <string>

#include "tui/canvas.hpp"
#include "tui/model.hpp"
#include "tui/render.hpp"

namespace ok::tui::testing {

// The session's events told to `model` (a RunModel, or a FanOut that records them too).
void feed_session(optimize::Observer& model);
// The fixture's snapshot with a fixed elapsed time (the model's own clock is live).
Snapshot session_snapshot();
// Sources per attempt number and evaluation JSON per evaluation id.
Details session_details();

// Compares `text` with tests/cpp/data/tui/NAME.txt; with OK_UPDATE_GOLDEN=1 rewrites the file
// instead. Fails the calling test with the first differing line.
void expect_golden(const std::string& name, const std::string& text);

// The screen drawn for `ui` at w x h, as text.
std::string render_text(const Snapshot& s, UiState ui, int w, int h, bool ascii = false);

}  // namespace ok::tui::testing
