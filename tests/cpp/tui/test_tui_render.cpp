// The whole screen and each panel at fixed sizes against tests/cpp/data/tui/*.txt (read them as
// a user would: each is what the terminal shows, colours aside). OK_UPDATE_GOLDEN=1 rewrites
// them; review the diff before committing.
#include <gtest/gtest.h>

#include "fixture.hpp"
#include "tui/draw.hpp"
#include "tui/panels.hpp"

namespace ok::tui {
namespace {

using testing::expect_golden;
using testing::render_text;
using testing::session_details;
using testing::session_snapshot;

TEST(TuiRender, ScreenAt80x24) {
  expect_golden("screen_80x24", render_text(session_snapshot(), {}, 80, 24));
}

TEST(TuiRender, ScreenAt120x40) {
  expect_golden("screen_120x40", render_text(session_snapshot(), {}, 120, 40));
}

TEST(TuiRender, ScreenAt200x60) {
  expect_golden("screen_200x60", render_text(session_snapshot(), {}, 200, 60));
}

TEST(TuiRender, AsciiScreenAt80x24) {
  const std::string text = render_text(session_snapshot(), {}, 80, 24, true);
  for (unsigned char ch : text) EXPECT_LT(ch, 0x80) << "a glyph outside ASCII";
  expect_golden("screen_ascii_80x24", text);
}

TEST(TuiRender, HelpOverlayAt120x40) {
  UiState ui;
  ui.help = true;
  expect_golden("help_120x40", render_text(session_snapshot(), ui, 120, 40));
}

TEST(TuiRender, HelpOverlayAt80x24) {
  UiState ui;
  ui.help = true;
  expect_golden("help_80x24", render_text(session_snapshot(), ui, 80, 24));
}

TEST(TuiRender, OpenedAttemptAt120x40) {
  UiState ui;
  ui.selected = 12;
  ui.detail = true;
  expect_golden("detail_120x40", render_text(session_snapshot(), ui, 120, 40));
}

TEST(TuiRender, SelectionAndFilterAt120x40) {
  UiState ui;
  ui.filter = "correct";
  ui.selected = 8;
  ui.focus = Panel::Diff;
  ui.diff_vs_previous = true;
  expect_golden("filtered_120x40", render_text(session_snapshot(), ui, 120, 40));
}

TEST(TuiRender, FilterPromptAt80x24) {
  UiState ui;
  ui.filtering = true;
  ui.filter = "err";
  expect_golden("filter_prompt_80x24", render_text(session_snapshot(), ui, 80, 24));
}

TEST(TuiRender, BeforeTheSessionStartsAt80x24) {
  expect_golden("empty_80x24", render_text(Snapshot{}, {}, 80, 24));
}

TEST(TuiRender, PausedAndStoppedStatesShowInTheStatusBar) {
  Snapshot s = session_snapshot();
  s.control = "paused";
  EXPECT_NE(render_text(s, {}, 120, 40).find("‖ paused"), std::string::npos);
  EXPECT_NE(render_text(s, {}, 120, 40).find("p resume"), std::string::npos);
  s.control = "stopping";
  EXPECT_NE(render_text(s, {}, 80, 24).find("■ stopping"), std::string::npos);
  s.stopped = "stopped";
  const std::string text = render_text(s, {}, 80, 24);
  EXPECT_NE(text.find("■ stopped"), std::string::npos);
  EXPECT_NE(text.find("ETA done"), std::string::npos);
}

TEST(TuiRender, TinyTerminalsSaySo) {
  EXPECT_EQ(render_text(session_snapshot(), {}, 19, 5).substr(0, 19), "kernel-code: the te");
}

// Each panel alone, in a rectangle the size it gets at 120x40.
std::string panel(void (*draw)(const Snapshot&, UiState&, const Details&, Canvas&, Rect), int w,
                  int h, UiState ui = {}) {
  Canvas c(w, h);
  draw(session_snapshot(), ui, session_details(), c, {0, 0, w, h});
  return c.text();
}

TEST(TuiPanels, Agent) {
  expect_golden("panel_agent_60x10", panel([](const Snapshot& s, UiState& ui, const Details&,
                                              Canvas& c, Rect r) { panels::agent(s, ui, c, r); },
                                           60, 10));
}

TEST(TuiPanels, AgentOfASelectedAttemptShowsTheCritic) {
  UiState ui;
  ui.selected = 12;
  expect_golden("panel_agent_selected_60x10",
                panel([](const Snapshot& s, UiState& u, const Details&, Canvas& c,
                         Rect r) { panels::agent(s, u, c, r); },
                      60, 10, ui));
}

TEST(TuiPanels, Trajectory) {
  expect_golden("panel_trajectory_60x10",
                panel([](const Snapshot& s, UiState& ui, const Details&, Canvas& c,
                         Rect r) { panels::trajectory(s, ui, c, r); },
                      60, 10));
}

TEST(TuiPanels, Profiling) {
  UiState ui;
  ui.selected = 12;
  expect_golden("panel_profiling_50x16",
                panel([](const Snapshot& s, UiState& u, const Details& d, Canvas& c,
                         Rect r) { panels::profiling(s, u, d, c, r); },
                      50, 16, ui));
}

TEST(TuiPanels, ExperimentLog) {
  expect_golden("panel_log_70x18", panel([](const Snapshot& s, UiState& ui, const Details&,
                                            Canvas& c, Rect r) { panels::log(s, ui, c, r); },
                                         70, 18));
}

TEST(TuiPanels, DiffSideBySide) {
  UiState ui;
  ui.selected = 13;
  expect_golden("panel_diff_120x16", panel([](const Snapshot& s, UiState& u, const Details& d,
                                              Canvas& c, Rect r) { panels::diff(s, u, d, c, r); },
                                           120, 16, ui));
}

TEST(TuiPanels, DiffUnifiedWhenNarrow) {
  UiState ui;
  ui.selected = 8;
  ui.diff_vs_previous = true;
  expect_golden("panel_diff_unified_60x14",
                panel([](const Snapshot& s, UiState& u, const Details& d, Canvas& c,
                         Rect r) { panels::diff(s, u, d, c, r); },
                      60, 14, ui));
}

}  // namespace
}  // namespace ok::tui
