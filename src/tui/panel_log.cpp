// The experiment log: one row per attempt (verdict in its colour, speedup, runtime, cost, wall
// time, flags, what it tried), the attempts in flight below them, the selection highlighted.
#include <fmt/core.h>

#include <algorithm>

#include "tui/draw.hpp"
#include "tui/panels.hpp"

namespace ok::tui::panels {

namespace {

// The verdict's width and which optional columns fit in `w` columns.
struct Columns {
  int verdict;
  bool cost, wall;
};

Columns columns(int w) {
  return {w >= 56 ? 11 : 8, w >= 60, w >= 80};
}

draw::Line header(Columns col) {
  std::string h = "   # " + fit("verdict", col.verdict + 1, true) + "speedup  runtime";
  if (col.cost) h += "    cost";
  if (col.wall) h += "   wall";
  h += "  flags · what";
  return {{h, {.fg = Color::Gray, .bold = true}}};
}

draw::Line row(const AttemptView& a, const AttemptView* best, Columns col) {
  draw::Line l;
  const bool is_best = best && best->number == a.number;
  l.push_back({is_best ? "★" : " ", draw::kWarn});
  l.push_back({fmt::format("{:>3} ", a.number), draw::kDim});
  l.push_back({fit(draw::verdict_short(a.verdict, col.verdict), col.verdict + 1, true),
               draw::verdict_style(a.verdict)});
  Style sp = draw::kPlain;
  if (a.correct && a.speedup) sp = *a.speedup >= 1 ? draw::kGood : draw::kWarn;
  if (is_best) sp.bold = true;
  l.push_back({fmt::format("{:>7}", draw::speedup(a.correct ? a.speedup : std::nullopt)), sp});
  l.push_back({fmt::format("{:>9}", draw::micros(a.runtime_us)), draw::kPlain});
  if (col.cost) l.push_back({fmt::format("{:>8}", draw::dollars(a.cost_usd)), draw::kDim});
  if (col.wall) l.push_back({fmt::format("{:>6.1f}s", a.wall_s), draw::kDim});
  l.push_back({"  ", draw::kPlain});
  std::string flags;
  for (const auto& f : a.flags) flags += (flags.empty() ? "" : ",") + f;
  if (!flags.empty()) l.push_back({flags + " ", draw::kWarn});
  l.push_back({a.description.empty() ? a.intent : a.description, draw::kPlain});
  return l;
}

draw::Line in_flight_row(const AgentMessage& m, Columns col) {
  const bool evaluating = m.state == "evaluating";
  return {{" ", draw::kPlain},
          {fmt::format("{:>3} ", m.number), draw::kDim},
          {fit(col.verdict >= 11 ? (evaluating ? "evaluating…" : "generating…")
                                 : (evaluating ? "eval…" : "gen…"),
               col.verdict + 1, true),
           evaluating ? draw::kInfo : draw::kWarn},
          {std::string(16 + (col.cost ? 8 : 0) + (col.wall ? 7 : 0) + 2, ' '), draw::kPlain},
          {m.title, draw::kDim}};
}

}  // namespace

void log(const Snapshot& s, const UiState& ui, Canvas& c, Rect r) {
  const auto list = filtered(s, ui.filter);
  std::string title = fmt::format("Experiment log · {} of {}", s.attempts.size(), s.standing.total);
  if (!ui.filter.empty())
    title = fmt::format("Experiment log · {} of {} match \"{}\"", list.size(), s.attempts.size(),
                        ui.filter);
  const Rect in = frame(c, r, Panel::Log, title, ui);
  if (in.empty()) return;
  const Columns col = columns(in.w);
  draw::put_line(c, in.x, in.y, header(col), in.w);
  const int h = in.h - 1;
  std::vector<const AgentMessage*> flying;
  if (ui.filter.empty())
    for (const auto& m : s.agents)
      if (m.state != "done") flying.push_back(&m);
  const int n = static_cast<int>(list.size() + flying.size());
  if (n == 0) {
    c.put(in.x + 2, in.y + 1,
          ui.filter.empty() ? "no attempt yet" : "no attempt matches the filter", draw::kDim,
          in.w - 2);
    return;
  }
  const AttemptView* sel = selected_attempt(s, ui);
  int at = -1;
  for (int i = 0; i < static_cast<int>(list.size()); ++i)
    if (list[static_cast<size_t>(i)] == sel) at = i;
  // Following the newest: the list's end shows; a chosen row stays near the middle.
  const int top =
      ui.selected < 0 ? std::max(0, n - h) : std::clamp(at - h / 2, 0, std::max(0, n - h));
  const AttemptView* best = s.best();
  for (int k = 0; k < h && top + k < n; ++k) {
    const int i = top + k, y = in.y + 1 + k;
    if (i < static_cast<int>(list.size())) {
      draw::put_line(c, in.x, y, row(*list[static_cast<size_t>(i)], best, col), in.w);
      if (list[static_cast<size_t>(i)] == sel) {
        for (int x = in.x; x < in.x + in.w; ++x) {
          Style st = c.at(x, y).style;
          st.reverse = true;
          c.paint({x, y, 1, 1}, st);
        }
      }
    } else {
      draw::put_line(c, in.x, y, in_flight_row(*flying[static_cast<size_t>(i) - list.size()], col),
                     in.w);
    }
  }
  if (n > h) {  // a scroll position mark on the right border
    const int y = r.y + 1 + (h - 1) * top / std::max(1, n - h) + 1;
    c.put(r.x + r.w - 1, std::min(y, r.y + r.h - 2), "┃", draw::kAccent);
  }
}

}  // namespace ok::tui::panels
