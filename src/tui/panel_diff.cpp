// The kernel diff: the selected attempt's source (right) against the best attempt's or the
// previous one's (left, `d` switches), side by side with line numbers and syntax colouring,
// changed lines red (base) and green (selected), long unchanged runs folded; unified below 100
// columns. Also the full-screen attempt's facts (Enter).
#include <fmt/core.h>

#include <algorithm>

#include "tui/diff.hpp"
#include "tui/draw.hpp"
#include "tui/panels.hpp"

namespace ok::tui::panels {

namespace {

using Kind = DiffRow::Kind;

struct Sides {
  const AttemptView* base = nullptr;
  std::string base_name;  // "best", "previous"
};

// The base the diff compares against: the best (the previous when the selected is the best).
Sides base_of(const Snapshot& s, const UiState& ui, const AttemptView& a) {
  const AttemptView* best = s.best();
  if (!ui.diff_vs_previous && best && best->number != a.number) return {best, "best"};
  const AttemptView* prev = nullptr;
  for (const auto& x : s.attempts)
    if (x.number < a.number && (!prev || x.number > prev->number)) prev = &x;
  return {prev, "previous"};
}

// One side's cell: line number, marker and the code (coloured by syntax when unchanged).
void side(Canvas& c, int x, int y, int w, const std::vector<std::string>& lines, int i, Kind k,
          bool left) {
  if (i < 0) {
    c.put(x, y, std::string(static_cast<size_t>(std::max(0, w)), ' '), draw::kPlain, w);
    return;
  }
  const bool changed = k != Kind::Same;
  const Style mark = left ? draw::kBad : draw::kGood;
  c.put(x, y, fmt::format("{:>4}", i + 1), draw::kDim, w);
  c.put(x + 4, y, changed ? (left ? "-" : "+") : " ", mark, w - 4);
  const std::string& code = lines[static_cast<size_t>(i)];
  if (changed)
    c.put(x + 5, y, code, mark, w - 5);
  else
    draw::put_line(c, x + 5, y, highlight(code), w - 5);
}

void fold_row(Canvas& c, Rect in, int y, int n) {
  const std::string t = fmt::format(" {} unchanged line{} ", n, n == 1 ? "" : "s");
  for (int x = in.x; x < in.x + in.w; ++x) c.put(x, y, "┈", draw::kDim);
  c.put(in.x + std::max(0, (in.w - text_width(t)) / 2), y, t, draw::kDim, in.w);
}

// Rows in unified form for narrow panels: a Changed row is its removed then its added line.
std::vector<DiffRow> unified(const std::vector<DiffRow>& rows) {
  std::vector<DiffRow> out;
  for (const auto& r : rows) {
    if (r.kind == Kind::Changed) {
      out.push_back({Kind::Removed, r.left, -1, 0});
      out.push_back({Kind::Added, -1, r.right, 0});
    } else {
      out.push_back(r);
    }
  }
  return out;
}

void draw_rows(Canvas& c, Rect in, const std::vector<DiffRow>& rows,
               const std::vector<std::string>& a, const std::vector<std::string>& b, bool split,
               int first) {
  const int half = (in.w - 1) / 2;
  for (int k = 0; k < in.h && first + k < static_cast<int>(rows.size()); ++k) {
    const DiffRow& row = rows[static_cast<size_t>(first + k)];
    const int y = in.y + k;
    if (row.kind == Kind::Fold) {
      fold_row(c, in, y, row.folded);
    } else if (split) {
      side(c, in.x, y, half, a, row.left, row.kind, true);
      c.put(in.x + half, y, "│", draw::kBorder);
      side(c, in.x + half + 1, y, in.w - half - 1, b, row.right, row.kind, false);
    } else if (row.left >= 0 && row.kind != Kind::Same) {
      side(c, in.x, y, in.w, a, row.left, row.kind, true);
    } else {
      side(c, in.x, y, in.w, b, row.right, row.kind, false);
    }
  }
}

}  // namespace

void diff(const Snapshot& s, UiState& ui, const Details& d, Canvas& c, Rect r) {
  const AttemptView* a = selected_attempt(s, ui);
  if (!a) {
    const Rect in = frame(c, r, Panel::Diff, "Kernel diff", ui);
    if (!in.empty()) c.put(in.x, in.y, "no attempt yet", draw::kDim, in.w);
    return;
  }
  const Sides base = base_of(s, ui, *a);
  auto source = [&](const AttemptView* x) -> std::optional<std::string> {
    return x && d.source ? d.source(*x) : std::nullopt;
  };
  const auto right = source(a);
  const auto left = source(base.base);
  const auto b = split_lines(right.value_or(""));
  const auto l = split_lines(left.value_or(""));
  std::vector<DiffRow> rows;
  int added = 0, removed = 0;
  if (left) {
    rows = side_by_side(l, b, 1 << 20);  // folded only when it does not fit
    if (static_cast<int>(rows.size()) > r.h - 2)
      rows = side_by_side(l, b, std::clamp((r.h - 4) / 4, 1, 3));
    for (const auto& x : rows) {
      added += x.kind == Kind::Added || x.kind == Kind::Changed;
      removed += x.kind == Kind::Removed || x.kind == Kind::Changed;
    }
  } else {
    for (int i = 0; i < static_cast<int>(b.size()); ++i) rows.push_back({Kind::Same, -1, i, 0});
  }
  std::string title = fmt::format("Kernel diff · #{}", a->number);
  if (left)
    title += fmt::format(" vs {} #{} · +{} -{}", base.base_name, base.base->number, added, removed);
  else if (right)
    title += " (no base to compare)";
  const Rect in = frame(c, r, Panel::Diff, title, ui);
  if (in.empty()) return;
  if (!right) {
    c.put(in.x, in.y, "source not available: " + (a->path.empty() ? "no file" : a->path),
          draw::kDim, in.w);
    return;
  }
  const bool split = left && in.w >= 100;
  if (left && !split) rows = unified(rows);
  ui.diff_scroll = std::clamp(ui.diff_scroll, 0, std::max(0, static_cast<int>(rows.size()) - in.h));
  draw_rows(c, in, rows, l, b, split, ui.diff_scroll);
}

void attempt_info(const Snapshot& s, const UiState& ui, Canvas& c, Rect r) {
  const AttemptView* a = selected_attempt(s, ui);
  const Rect in{r.x + 1, r.y + 1, r.w - 2, r.h - 2};
  c.box(r, fmt::format("Attempt #{} · Esc closes", a ? a->number : 0), draw::kFocusBorder,
        draw::kFocusTitle);
  if (!a || in.empty()) return;
  std::vector<draw::Line> lines;
  auto fact = [&](std::string k, std::string v, Style st = draw::kPlain) {
    if (!v.empty()) lines.push_back({{fit(k, 10, true), draw::kDim}, {std::move(v), st}});
  };
  fact("verdict", a->verdict, draw::verdict_style(a->verdict));
  fact("speedup", draw::speedup(a->correct ? a->speedup : std::nullopt), draw::kBold);
  fact("runtime", draw::micros(a->runtime_us) + "   eager " + draw::micros(a->eager_us) +
                      "   compile " + draw::micros(a->compile_us));
  fact("cost", draw::dollars(a->cost_usd) + fmt::format("   wall {:.1f} s", a->wall_s));
  fact("intent", a->intent);
  fact("what", a->description);
  std::string flags;
  for (const auto& f : a->flags) flags += (flags.empty() ? "" : ", ") + f;
  fact("flags", flags, draw::kWarn);
  fact("file", a->path, draw::kDim);
  for (const auto& m : s.agents)
    if (m.number == a->number && !m.diagnosis.empty()) {
      bool first = true;
      for (auto& w : draw::wrap(m.diagnosis, in.w - 10)) {
        lines.push_back(
            {{fit(first ? "critic" : "", 10, true), draw::kCompile}, {std::move(w), draw::kPlain}});
        first = false;
      }
      for (const auto& sug : m.suggestions) fact("  →", sug, draw::kDim);
    }
  if (!a->error.empty())
    for (auto& w : draw::wrap(a->error, in.w - 10))
      lines.push_back({{"error     ", draw::kBad}, {std::move(w), draw::kBad}});
  for (int k = 0; k < in.h && k < static_cast<int>(lines.size()); ++k)
    draw::put_line(c, in.x, in.y + k, lines[static_cast<size_t>(k)], in.w);
}

}  // namespace ok::tui::panels
