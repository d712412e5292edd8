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

// The bars' cells, the attempts shown (the newest that fit) and the value scale.
struct Chart {
  Rect area;
  std::vector<const AttemptView*> xs;       // every attempt, by number
  std::vector<std::optional<double>> best;  // the best speedup up to each attempt
  size_t first = 0;                         // the first attempt shown
  int step = 1, bar = 1;                    // columns per attempt, of which the bar's
  double top = 1;                           // the value of the top row's top
  // The row (of `area`) a value's level falls in.
  int row(double v) const {
    const int k = static_cast<int>(std::floor(v / top * area.h));
    return area.y + area.h - 1 - std::clamp(k, 0, area.h - 1);
  }
  int column(size_t i) const { return area.x + static_cast<int>(i - first) * step; }
};

Chart chart_of(std::vector<const AttemptView*> xs, Rect area, std::optional<double> compile) {
  Chart ch{area, std::move(xs)};
  // Columns per attempt: up to 3 cells of bar and a gap while few, one cell when many.
  ch.step = std::clamp(area.w / static_cast<int>(ch.xs.size()), 1, 4);
  ch.bar = std::max(1, ch.step - 1);
  ch.first = ch.xs.size() - std::min(ch.xs.size(), static_cast<size_t>(area.w / ch.step));
  double top = std::max(1.0, compile.value_or(0));
  std::optional<double> b;
  for (const auto* a : ch.xs) {
    if (a->correct && a->speedup && (!b || *a->speedup > *b)) b = a->speedup;
    ch.best.push_back(b);
    if (b) top = std::max(top, *b);
  }
  ch.top = top * 1.15;
  return ch;
}

// Each attempt's bar in eighth blocks (the selected one in cyan), failures as crosses on the
// floor; the best so far as a line over them.
void bars(Canvas& c, const Chart& ch, const AttemptView* sel) {
  const int floor_y = ch.area.y + ch.area.h - 1;
  for (size_t i = ch.first; i < ch.xs.size(); ++i) {
    const AttemptView& a = *ch.xs[i];
    const int x = ch.column(i);
    if (!a.correct || !a.speedup) {
      c.put(x + (ch.bar - 1) / 2, floor_y, "×",
            a.verdict == "generation_failed" ? draw::kDim : draw::kBad);
      continue;
    }
    Style st = *a.speedup >= 1 ? draw::kGood : draw::kWarn;
    if (&a == sel) st = {.fg = Color::Cyan, .bold = true};
    int eighths = static_cast<int>(std::lround(*a.speedup / ch.top * ch.area.h * 8));
    for (int y = floor_y; y >= ch.area.y && eighths > 0; --y, eighths -= 8)
      for (int k = 0; k < ch.bar; ++k) c.put(x + k, y, draw::vbar(std::min(8, eighths)), st);
  }
  for (size_t i = ch.first; i < ch.xs.size(); ++i) {
    if (!ch.best[i]) continue;
    const int y = ch.row(*ch.best[i]);
    for (int x = ch.column(i); x < ch.column(i) + ch.step; ++x)
      if (c.at(x, y).glyph == " ") c.put(x, y, "─", draw::kAccent);
  }
}

// The value scale in the gutter left of `ch` (the top, torch.compile's and eager's levels).
void scale(Canvas& c, const Chart& ch, std::optional<double> compile, int gutter_x) {
  for (int y = ch.area.y; y < ch.area.y + ch.area.h; ++y) c.put(ch.area.x - 1, y, "│", draw::kDim);
  auto label = [&](double v, Style st) {
    const int y = ch.row(v);
    c.put(gutter_x, y, fmt::format("{:>4.1f}x", v).substr(0, ch.area.x - 1 - gutter_x), st);
    c.put(ch.area.x - 1, y, "┤", draw::kDim);
  };
  label(ch.top, draw::kDim);
  if (compile && ch.row(*compile) != ch.row(1.0) && ch.row(*compile) != ch.area.y)
    label(*compile, draw::kCompile);
  if (ch.row(1.0) != ch.area.y) label(1.0, draw::kDim);
}

// Under the bars: the first and last attempt numbers shown, the selected one marked.
void axis(Canvas& c, const Chart& ch, const AttemptView* sel) {
  const int y = ch.area.y + ch.area.h;
  for (size_t i = ch.first; i < ch.xs.size(); ++i)
    if (ch.xs[i] == sel) c.put(ch.column(i) + (ch.bar - 1) / 2, y, "▲", draw::kAccent);
  c.put(ch.area.x, y, fmt::format("#{}", ch.xs[ch.first]->number), draw::kDim);
  const std::string last = fmt::format("#{}", ch.xs.back()->number);
  const int lx = ch.column(ch.xs.size() - 1) + ch.bar - text_width(last);
  if (lx > ch.area.x + 4) c.put(lx, y, last, draw::kDim);
}

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
  const bool with_axis = in.h >= 8;  // a row of attempt numbers under the bars
  const Rect area{in.x + kGutter, in.y + 1, in.w - kGutter, in.h - 1 - (with_axis ? 1 : 0)};
  if (area.empty()) return;
  if (xs.empty()) {
    c.put(area.x, area.y, "waiting for the first attempt", draw::kDim, area.w);
    return;
  }
  const Chart ch = chart_of(std::move(xs), area, compile);
  const AttemptView* sel = selected_attempt(s, ui);
  bars(c, ch, sel);
  level(c, ch, 1.0, "┈", draw::kDim);
  if (compile) level(c, ch, *compile, "╌", draw::kCompile);
  scale(c, ch, compile, in.x);
  if (with_axis) axis(c, ch, sel);
}

}  // namespace ok::tui::panels
