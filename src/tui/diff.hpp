// The kernel diff's pieces (internal to src/tui): a line diff of two sources aligned side by side
// with long unchanged runs folded, and the syntax colouring of one line of Python, Triton or CUDA
// C++ (keywords, strings, comments, numbers, decorators). Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tui/draw.hpp"

namespace ok::tui {

struct DiffRow {
  enum class Kind { Same, Changed, Removed, Added, Fold };
  Kind kind = Kind::Same;
  int left = -1, right = -1;  // 0-based line indices into each side, -1 where the side is blank
  int folded = 0;             // Fold: how many unchanged lines the row stands for
};

// `text` as lines, tabs expanded to 4 columns, a trailing newline not making an empty last line.
std::vector<std::string> split_lines(std::string_view text);

// The rows of `a` (left, the base) against `b` (right), the lines of a removed run and an added
// run at the same place paired as Changed rows (each with its edit where one is similar); unchanged
// runs longer than 2 * `context` + 1 are folded to `context` lines on each side of a change
// (identical sources are not folded). Inputs past 4000 lines a side are diffed coarsely (the
// differing middle as one change).
std::vector<DiffRow> side_by_side(const std::vector<std::string>& a,
                                  const std::vector<std::string>& b, int context);

// `line` as styled spans: keywords, strings, comments, numbers and decorators in their colours,
// the rest in `base`.
draw::Line highlight(std::string_view line, Style base = {});

}  // namespace ok::tui
