// The trajectory: each attempt's speedup as a bar (eighth blocks), the best so far as a line
// over them, eager (1.0x) and torch.compile (eager / compile time) as reference lines, failed
// attempts as red crosses on the floor; the newest attempts when they outnumber the columns.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "tui/draw.hpp"
#include "tui/panels.hpp"

namespace ok::tui::panels {

namespace {

// torch.compile's speedup over eager: the newest attempt's evaluation that timed both.
std::optional<double> compile_ratio(const std::vector<const AttemptView*>& xs) {
  for (auto it = xs.rbegin(); it != xs.rend(); ++it)
    if ((*it)->eager_us && (*it)->compile_us && *(*it)->compile_us > 0)
      return *(*it)->eager_us / *(*it)->compile_us;
  return std::nullopt;
}

struct Chart {
  Rect area;  // the bars' cells
  double top = 1;
  // The row (of `area`) a value's level falls in.
  int row(double v) const {
    const int k = static_cast<int>(std::floor(v / top * area.h));
    return area.y + area.h - 1 - std::clamp(k, 0, area.h - 1);
  }
};

// A horizontal line at value `v` in the cells no bar or mark took.
void level(Canvas& c, const Chart& ch, double v, std::string_view glyph, Style st) {
  const int y = ch.row(v);
  for (int x = ch.area.x; x < ch.area.x + ch.area.w; ++x)
    if (c.at(x, y).glyph == " ") c.put(x, y, glyph, st);
}

void summary(const Snapshot& s, const std::vector<const AttemptView*>& xs,
             std::optional<double> compile, Canvas& c, Rect in) {
  draw::Line l;
  if (const AttemptView* b = s.best()) {
    l.push_back({"best ", draw::kDim});
    l.push_back({draw::speedup(b->speedup), {.fg = Color::Green, .bold = true}});
    l.push_back({fmt::format(" #{}", b->number), draw::kDim});
  } else {
    l.push_back({"no correct kernel yet", draw::kDim});
  }
  if (!xs.empty()) {
    const AttemptView& last = *xs.back();
    l.push_back({fmt::format("  last #{} ", last.number), draw::kDim});
    l.push_back({last.correct ? draw::speedup(last.speedup) : draw::verdict_short(last.verdict),
                 draw::verdict_style(last.verdict)});
  }
  l.push_back({"  compile ", draw::kDim});
  l.push_back({draw::speedup(compile), draw::kCompile});
  const int used = draw::put_line(c, in.x, in.y, l, in.w);
  const draw::Line legend = {{"█", draw::kGood},    {" speedup ", draw::kDim},
                             {"─", draw::kAccent},  {" best ", draw::kDim},
                             {"┈", draw::kDim},     {" eager ", draw::kDim},
                             {"╌", draw::kCompile}, {" compile", draw::kDim}};
  const int lw = 40;
  if (in.w - used >= lw + 2) draw::put_line(c, in.x + in.w - lw, in.y, legend, lw);
}

}  // namespace

void trajectory(const Snapshot& s, const UiState& ui, Canvas& c, Rect r) {
  const Rect in = frame(c, r, Panel::Trajectory, "Trajectory · speedup vs eager", ui);
  if (in.empty()) return;
  std::vector<const AttemptView*> xs;
  for (const auto& a : s.attempts) xs.push_back(&a);
  std::sort(xs.begin(), xs.end(), [](auto* a, auto* b) { return a->number < b->number; });
  const auto compile = compile_ratio(xs);
  summary(s, xs, compile, c, in);
  constexpr int kGutter = 6;
  const bool axis = in.h >= 8;  // a row of attempt numbers under the bars
  Chart ch{{in.x + kGutter, in.y + 1, in.w - kGutter, in.h - 1 - (axis ? 1 : 0)}};
  if (ch.area.empty()) return;
  if (xs.empty()) {
    c.put(ch.area.x, ch.area.y, "waiting for the first attempt", draw::kDim, ch.area.w);
    return;
  }
  // Columns per attempt: up to 3 cells of bar and a gap while few, one cell when many.
  const int step = std::clamp(ch.area.w / static_cast<int>(xs.size()), 1, 4);
  const int bar = std::max(1, step - 1);
  const size_t shown = std::min(xs.size(), static_cast<size_t>(ch.area.w / step));
  const size_t first = xs.size() - shown;
  double top = std::max(1.0, compile.value_or(0));
  std::vector<std::optional<double>> best(xs.size());
  std::optional<double> b;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i]->correct && xs[i]->speedup && (!b || *xs[i]->speedup > *b)) b = xs[i]->speedup;
    best[i] = b;
    if (b) top = std::max(top, *b);
  }
  ch.top = top * 1.15;
  const AttemptView* sel = selected_attempt(s, ui);
  for (size_t i = first; i < xs.size(); ++i) {
    const AttemptView& a = *xs[i];
    const int x = ch.area.x + static_cast<int>(i - first) * step;
    const int floor_y = ch.area.y + ch.area.h - 1;
    if (!a.correct || !a.speedup) {
      c.put(x + (bar - 1) / 2, floor_y, "×",
            a.verdict == "generation_failed" ? draw::kDim : draw::kBad);
      continue;
    }
    Style st = *a.speedup >= 1 ? draw::kGood : draw::kWarn;
    if (&a == sel) st = {.fg = Color::Cyan, .bold = true};
    int eighths = static_cast<int>(std::lround(*a.speedup / ch.top * ch.area.h * 8));
    for (int y = floor_y; y >= ch.area.y && eighths > 0; --y, eighths -= 8)
      for (int k = 0; k < bar; ++k) c.put(x + k, y, draw::vbar(std::min(8, eighths)), st);
  }
  for (size_t i = first; i < xs.size(); ++i) {  // the best so far, above the bars
    if (!best[i]) continue;
    const int x = ch.area.x + static_cast<int>(i - first) * step;
    const int y = ch.row(*best[i]);
    for (int k = 0; k < step; ++k)
      if (c.at(x + k, y).glyph == " ") c.put(x + k, y, "─", draw::kAccent);
  }
  level(c, ch, 1.0, "┈", draw::kDim);
  if (compile) level(c, ch, *compile, "╌", draw::kCompile);
  for (int y = ch.area.y; y < ch.area.y + ch.area.h; ++y)
    c.put(in.x + kGutter - 1, y, "│", draw::kDim);
  auto label = [&](double v, Style st) {
    const int y = ch.row(v);
    c.put(in.x, y, fmt::format("{:>4.1f}x", v).substr(0, kGutter - 1), st);
    c.put(in.x + kGutter - 1, y, "┤", draw::kDim);
  };
  label(ch.top, draw::kDim);
  if (compile && ch.row(*compile) != ch.row(1.0) && ch.row(*compile) != ch.area.y)
    label(*compile, draw::kCompile);
  if (ch.row(1.0) != ch.area.y) label(1.0, draw::kDim);
  if (axis) {  // first and last attempt numbers, the selected one marked
    const int y = ch.area.y + ch.area.h;
    for (size_t i = first; i < xs.size(); ++i)
      if (xs[i] == sel)
        c.put(ch.area.x + static_cast<int>(i - first) * step + (bar - 1) / 2, y, "▲",
              draw::kAccent);
    c.put(ch.area.x, y, fmt::format("#{}", xs[first]->number), draw::kDim);
    const std::string last = fmt::format("#{}", xs.back()->number);
    const int lx = ch.area.x + static_cast<int>(shown - 1) * step + bar - text_width(last);
    if (lx > ch.area.x + 4) c.put(lx, y, last, draw::kDim);
  }
}

}  // namespace ok::tui::panels
