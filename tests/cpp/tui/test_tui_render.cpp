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

// Resizing goes through every size: each draws (no panel writes past the canvas, every row has
// its width), the overlays too.
TEST(TuiRender, EverySizeDraws) {
  const Snapshot s = session_snapshot();
  const Details d = session_details();
  auto draw_at = [&](int w, int h) {
    for (int mode = 0; mode < 3; ++mode) {
      UiState ui;
      ui.help = mode == 1;
      ui.detail = mode == 2;
      ui.diff_scroll = 1000;
      ui.agent_scroll = 1000;
      Canvas c(w, h);
      render(s, ui, d, c);
      for (int y = 0; y < h; ++y) ASSERT_EQ(text_width(c.row_text(y)), w) << w << "x" << h;
      EXPECT_GE(ui.diff_scroll, 0);
    }
  };
  for (int w = 1; w <= 210; w += 1)
    for (int h : {1, 6, 7, 9, 13, 24, 31}) draw_at(w, h);
  for (int h = 1; h <= 70; ++h)
    for (int w : {20, 33, 80, 99, 100, 139, 140, 159, 160, 200}) draw_at(w, h);
}

TEST(TuiRender, TinyTerminalsSaySo) {
  EXPECT_EQ(render_text(session_snapshot(), {}, 19, 5).substr(0, 19), "kernel-code: the te");
}

// Where `text` starts on the canvas (one glyph per cell), or {-1, -1}.
std::pair<int, int> find(const Canvas& c, std::string_view text) {
  for (int y = 0; y < c.height(); ++y)
    for (int x = 0; x < c.width(); ++x) {
      std::string run;
      for (int k = x; k < c.width() && run.size() < text.size(); ++k) run += c.at(k, y).glyph;
      if (run.starts_with(text)) return {x, y};
    }
  return {-1, -1};
}

TEST(TuiRender, VerdictsSpeedupsSelectionAndFocusHaveTheirStyles) {
  Canvas c(120, 40);
  UiState ui;
  render(session_snapshot(), ui, session_details(), c);
  const auto [ix, iy] = find(c, "incorrect");
  ASSERT_GE(ix, 0);
  EXPECT_EQ(c.at(ix, iy).style.fg, Color::Red);
  const auto [rx, ry] = find(c, "rejected");
  EXPECT_EQ(c.at(rx, ry).style.fg, Color::Red);
  const auto [tx, ty] = find(c, "timeout");
  EXPECT_EQ(c.at(tx, ty).style.fg, Color::Yellow);
  const auto [bx, by] = find(c, "★ 12 correct       2.47x");
  ASSERT_GE(bx, 0);
  EXPECT_EQ(c.at(bx + 5, by).style.fg, Color::Green);
  EXPECT_EQ(c.at(bx + 20, by).style, (Style{.fg = Color::Green, .bold = true}));
  EXPECT_EQ(c.at(bx, by).style.fg, Color::Yellow);   // the best's star
  const auto [sx, sy] = find(c, " 13 runtime_err");  // following: the newest is selected
  ASSERT_GE(sx, 0);
  EXPECT_TRUE(c.at(sx, sy).style.reverse);
  EXPECT_FALSE(c.at(bx, by).style.reverse);
  const auto [lx, ly] = find(c, "╭─ 4 Experiment log");
  EXPECT_EQ(c.at(lx, ly).style, (Style{.fg = Color::Cyan, .bold = true}));  // the focus
  const auto [ax, ay] = find(c, "╭─ 1 Agent");
  EXPECT_EQ(c.at(ax, ay).style.fg, Color::Gray);
  const auto [mx, my] = find(c, "  10-");  // the diff: removed red, added green
  ASSERT_GE(mx, 0);
  EXPECT_EQ(c.at(mx + 4, my).style.fg, Color::Red);
  const auto [px, py] = find(c, "  12+");
  ASSERT_GE(px, 0);
  EXPECT_EQ(c.at(px + 4, py).style.fg, Color::Green);
  const auto [kx, ky] = find(c, "tl.arange(0, BLOCK)");  // unchanged code: syntax colours
  ASSERT_GE(kx, 0);
  EXPECT_EQ(c.at(kx, ky).style.fg, Color::Magenta);
  EXPECT_EQ(c.at(kx + 3, ky).style.fg, Color::Default);
  EXPECT_EQ(c.at(kx + 10, ky).style.fg, Color::Cyan);  // 0
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

// With a deep profile (docs/profiling.md): the dominant kernel's DRAM, SM and occupancy as ncu
// measured them, and the top stall, between the roofline and the kernel table.
TEST(TuiPanels, ProfilingWithADeepProfile) {
  UiState ui;
  ui.selected = 12;
  expect_golden("panel_profiling_deep_50x18",
                panel(
                    [](const Snapshot& s, UiState& u, const Details& d, Canvas& c, Rect r) {
                      Details deep = d;
                      deep.evaluation = [&d](int64_t id) -> std::optional<nlohmann::json> {
                        auto ev = d.evaluation(id);
                        if (!ev) return ev;
                        (*ev)["profile"]["tier"] = "deep";
                        (*ev)["profile"]["kernel_metrics"] = nlohmann::json::array(
                            {{{"name", "swish_kernel_0d1d2de"},
                              {"duration_us", 21.3},
                              {"dram_throughput_pct", 81.4},
                              {"sm_throughput_pct", 22.0},
                              {"achieved_occupancy_pct", 38.5},
                              {"occupancy_limiter", {{"by", {"registers"}}}},
                              {"top_stalls", {{{"reason", "long_scoreboard"}, {"share", 0.62}}}}}});
                        return ev;
                      };
                      panels::profiling(s, u, deep, c, r);
                    },
                    50, 18, ui));
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
