#include "tui/render.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>

#include "tui/draw.hpp"
#include "tui/panels.hpp"

namespace ok::tui {

namespace {

using draw::Line;
using draw::Span;

struct Layout {
  Rect agent, trajectory, profiling, log, diff;
};

// Wide screens: the three live panels side by side on top, the log and a wide diff below.
// Otherwise three bands: agent | trajectory, log | profiling, then the diff across.
Layout layout(Rect b) {
  Layout l;
  if (b.w >= 160 && b.h >= 30) {
    const int top = std::clamp(b.h * 3 / 10, 10, 20);
    const int w1 = b.w * 36 / 100, w2 = b.w * 30 / 100;
    l.agent = {b.x, b.y, w1, top};
    l.trajectory = {b.x + w1, b.y, w2, top};
    l.profiling = {b.x + w1 + w2, b.y, b.w - w1 - w2, top};
    const int lw = b.w * 42 / 100;
    l.log = {b.x, b.y + top, lw, b.h - top};
    l.diff = {b.x + lw, b.y + top, b.w - lw, b.h - top};
    return l;
  }
  const int a = std::clamp(b.h * 27 / 100, 6, 12);
  const int c = std::clamp((b.h - a) * 45 / 100, 6, b.h);
  const int m = b.h - a - c;
  const int aw = b.w / 2, lw = b.w * 60 / 100;
  l.agent = {b.x, b.y, aw, a};
  l.trajectory = {b.x + aw, b.y, b.w - aw, a};
  l.log = {b.x, b.y + a, lw, m};
  l.profiling = {b.x + lw, b.y + a, b.w - lw, m};
  l.diff = {b.x, b.y + a + m, b.w, c};
  return l;
}

// A piece of the status bar in three lengths, the longest that fits taken; a flexible piece (a
// name) is cut, in the shortest form, to share what room the others leave.
struct Segment {
  std::string wide, compact, tiny;
  Style style;
  bool flex = false;
};

Style state_style(const Snapshot& s) {
  if (s.stopped) return {.fg = Color::Gray, .bold = true, .reverse = true};
  if (s.control == "paused") return {.fg = Color::Yellow, .bold = true, .reverse = true};
  if (s.control == "stopping") return {.fg = Color::Magenta, .bold = true, .reverse = true};
  return {.fg = Color::Green, .bold = true, .reverse = true};
}

std::string state_text(const Snapshot& s) {
  if (s.stopped) return "■ " + *s.stopped;
  if (s.control == "paused") return "‖ paused";
  if (s.control == "stopping") return "■ stopping";
  return "▶ running";
}

// The ETA: this run's seconds per attempt times the attempts left; empty when unknown.
std::string eta(const Snapshot& s) {
  if (s.stopped) return "done";
  const int left = s.standing.total - s.standing.recorded;
  if (s.finished_this_run <= 0 || left <= 0) return "-";
  return draw::clock(s.elapsed_s / s.finished_this_run * left);
}

std::string short_device(std::string d) {
  for (std::string_view p : {"NVIDIA ", "AMD "})
    if (d.starts_with(p)) d.erase(0, p.size());
  return d;
}

// The top line: what runs where, how far, what it costs, how long, and the run's state.
void status_bar(const Snapshot& s, Canvas& c) {
  const Style bar{.fg = Color::Cyan, .reverse = true};
  const Style strong{.fg = Color::Cyan, .bold = true, .reverse = true};
  c.fill({0, 0, c.width(), 1}, bar);
  const auto& i = s.info;
  if (i.problem.empty()) {  // before the session's first event
    c.put(0, 0, " kernel-code │ waiting for the session to start", strong);
    return;
  }
  const std::string& problem = i.problem;
  const std::string device = i.device.empty() ? std::string("device ?") : i.device;
  const std::string best = "best " + draw::speedup(s.standing.best_speedup);
  const std::string n = fmt::format("{}/{}", s.standing.recorded, s.standing.total);
  const std::string money = fmt::format("${:.2f}", s.standing.cost_usd);
  const std::string clock = draw::clock(s.elapsed_s), left = "ETA " + eta(s);
  std::vector<Segment> seg = {
      {"kernel-code", "", "", strong},
      {problem, problem, problem, strong, true},
      {i.backend, i.backend, i.backend, bar},
      {i.model, i.model, i.model, bar, true},
      {device, short_device(device), short_device(device), bar},
      {"attempt " + n, n, n, bar},
      {best, best, draw::speedup(s.standing.best_speedup), strong},
      {draw::dollars(s.standing.cost_usd), money, money, bar},
      {clock + " elapsed", clock, clock, bar},
      {left, left, left, bar},
  };
  const std::string state = " " + state_text(s) + " ";
  const int room = c.width() - text_width(state) - 1;
  // The first form that fits: wide, compact, or tiny with the names cut.
  enum Form { kWide, kCompact, kTiny };
  auto text_of = [](Segment& g, int form) -> std::string& {
    return form == kWide ? g.wide : form == kCompact ? g.compact : g.tiny;
  };
  int form = kTiny;
  for (int f : {kWide, kCompact}) {
    int w = 0;
    for (auto& g : seg)
      if (!text_of(g, f).empty()) w += text_width(text_of(g, f)) + 3;
    if (w <= room) {
      form = f;
      break;
    }
  }
  if (form == kTiny) {  // the names share what the fixed pieces leave
    int fixed = 0, flex = 0;
    for (const auto& g : seg)
      if (!g.tiny.empty()) (g.flex ? flex : fixed) += g.flex ? 1 : text_width(g.tiny) + 1;
    int budget = room - fixed - flex;
    for (auto& g : seg)
      if (g.flex && !g.tiny.empty()) {
        const int share = std::max(4, budget / flex--);
        g.tiny = fit(g.tiny, std::min(share, text_width(g.tiny)));
        budget -= text_width(g.tiny);
      }
  }
  int x = 0;
  for (auto& g : seg) {
    const std::string& t = text_of(g, form);
    if (t.empty()) continue;
    if (x > 0)
      x += c.put(x, 0, form == kTiny ? " " : " │ ", bar, std::max(0, room - x));
    else
      x += c.put(x, 0, " ", bar);
    x += c.put(x, 0, t, g.style, std::max(0, room - x));
  }
  c.put(c.width() - text_width(state), 0, state, state_style(s));
}

// The bottom line: the filter prompt while typing; else the filter, the keys (as many as the
// engine's last warning leaves room for: ? first, it lists them all) and that warning.
void key_line(const Snapshot& s, const UiState& ui, Canvas& c) {
  const int y = c.height() - 1;
  const Style key{.fg = Color::Cyan, .bold = true};
  const Style tag{.fg = Color::Yellow, .bold = true, .reverse = true};
  if (ui.filtering) {
    Line l = {{" filter ", tag},
              {" /" + ui.filter, draw::kBold},
              {"█", draw::kAccent},
              {"   Enter keep · Esc clear · words start: #12, correct, no_custom, persistent",
               draw::kDim}};
    draw::put_line(c, 0, y, l, c.width());
    return;
  }
  int x = 0;
  if (!ui.filter.empty())
    x = draw::put_line(c, 0, y, {{" filter ", tag}, {" " + ui.filter + " ", draw::kWarn}},
                       c.width());
  const std::string warning = s.warnings.empty() ? "" : "! " + s.warnings.back();
  const int keep = std::min(text_width(warning), std::max(30, c.width() / 3));
  const int room = c.width() - x - (warning.empty() ? 0 : keep + 1);
  const bool paused = s.control == "paused";
  const std::array<std::pair<const char*, const char*>, 9> keys = {
      {{"?", "help"},
       {"q", "quit"},
       {"p", paused ? "resume" : "pause"},
       {"s", "stop"},
       {"Tab", "panel"},
       {"↑↓", "select"},
       {"⏎", "open"},
       {"d", "base"},
       {"/", "filter"}}};
  int used = 0;
  for (const auto& [k, what] : keys) {
    const Line hint = {{std::string(" ") + k, key}, {std::string(" ") + what + " ", draw::kDim}};
    const int w = text_width(hint[0].text) + text_width(hint[1].text);
    if (used + w > room) break;
    used += draw::put_line(c, x + used, y, hint, w);
  }
  if (!warning.empty()) {
    const std::string t = fit(warning, c.width() - x - used - 1);
    c.put(c.width() - text_width(t), y, t, draw::kWarn);
  }
}

// The key overlay, centred.
void help(Canvas& c) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 15> kKeys = {{
      {"q", "quit; the session stays resumable"},
      {"p", "pause/resume: no new generations while paused"},
      {"s", "stop after the attempts in flight finish"},
      {"Tab S-Tab ← →", "move the focus between panels (h l too)"},
      {"1 .. 5", "focus agent, trajectory, profiling, log, diff"},
      {"↑ ↓ j k", "select an attempt, or scroll diff and agent"},
      {"PgUp PgDn", "a page up or down"},
      {"Home End g G", "first / last; End follows the newest"},
      {"Enter", "open the selected attempt full screen"},
      {"Esc", "close it, the help, or clear the filter"},
      {"d", "diff against the best or the previous attempt"},
      {"/", "filter: #12, correct, no_custom, any word"},
      {"?", "this help"},
      {"", ""},
      {"colours", "green correct, red failed, yellow slow"},
  }};
  const int w = std::min(c.width() - 2, 68), h = std::min(c.height() - 2, 19);
  const Rect r{(c.width() - w) / 2, (c.height() - h) / 2, w, h};
  c.fill(r);
  c.box(r, "Keys", draw::kFocusBorder, draw::kFocusTitle);
  int y = r.y + 2;
  for (const auto& [k, what] : kKeys) {
    if (y >= r.y + r.h - 2) break;
    c.put(r.x + 3, y, fit(k, 14, true), {.fg = Color::Cyan, .bold = true});
    c.put(r.x + 18, y, what, draw::kPlain, r.w - 21);
    ++y;
  }
  const std::string_view foot = "Esc or ? closes";
  c.put(r.x + r.w - 3 - text_width(foot), r.y + r.h - 2, foot, draw::kDim);
}

}  // namespace

namespace panels {

Rect frame(Canvas& c, Rect r, Panel p, std::string_view title, const UiState& ui) {
  const bool focused = ui.focus == p && !ui.detail;
  const std::string t = fmt::format("{} {}", static_cast<int>(p) + 1, title);
  c.box(r, t, focused ? draw::kFocusBorder : draw::kBorder,
        focused ? draw::kFocusTitle : draw::kTitle);
  return {r.x + 1, r.y + 1, r.w - 2, r.h - 2};
}

}  // namespace panels

void render(const Snapshot& s, UiState& ui, const Details& d, Canvas& c) {
  c.clear();
  if (c.width() < 20 || c.height() < 6) {
    c.put(0, 0, "kernel-code: the terminal is too small", draw::kWarn);
    return;
  }
  status_bar(s, c);
  const Rect body{0, 1, c.width(), c.height() - 2};
  if (ui.detail && selected_attempt(s, ui)) {
    const bool side = body.w >= 140;
    const int iw = side ? 48 : body.w, ih = side ? body.h : std::min(11, body.h / 2);
    panels::attempt_info(s, ui, c, {body.x, body.y, iw, ih});
    panels::diff(s, ui, d, c,
                 side ? Rect{body.x + iw, body.y, body.w - iw, body.h}
                      : Rect{body.x, body.y + ih, body.w, body.h - ih});
  } else {
    const Layout l = layout(body);
    panels::agent(s, ui, c, l.agent);
    panels::trajectory(s, ui, c, l.trajectory);
    panels::profiling(s, ui, d, c, l.profiling);
    panels::log(s, ui, c, l.log);
    panels::diff(s, ui, d, c, l.diff);
  }
  key_line(s, ui, c);
  if (ui.help) help(c);
}

}  // namespace ok::tui
