// The render's shared vocabulary (internal to src/tui): the palette, number formats, wrapped text,
// gauges and bars, and the styled line that panels build up before drawing it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tui/canvas.hpp"

namespace ok::tui::draw {

// The palette.
inline constexpr Style kPlain{};
inline constexpr Style kDim{.fg = Color::Gray};
inline constexpr Style kBold{.bold = true};
inline constexpr Style kBorder{.fg = Color::Gray};
inline constexpr Style kFocusBorder{.fg = Color::Cyan, .bold = true};
inline constexpr Style kTitle{.bold = true};
inline constexpr Style kFocusTitle{.fg = Color::Cyan, .bold = true};
inline constexpr Style kGood{.fg = Color::Green};
inline constexpr Style kBad{.fg = Color::Red};
inline constexpr Style kWarn{.fg = Color::Yellow};
inline constexpr Style kInfo{.fg = Color::Blue};
inline constexpr Style kAccent{.fg = Color::Cyan};
inline constexpr Style kCompile{.fg = Color::Magenta};
inline constexpr Style kBar{.fg = Color::Black, .bg = Color::Cyan};
inline constexpr Style kSelected{.reverse = true};

// The colour of a verdict: green correct, red wrong or rejected, yellow slow or unsure, gray when
// nothing was evaluated.
Style verdict_style(std::string_view verdict);
// The verdict in at most 11 columns (compile_error -> compile_err, generation_failed -> gen_failed)
// or, when `width` is less, in 8 (compile, genfail, wrong for incorrect).
std::string verdict_short(std::string_view verdict, int width = 11);

std::string speedup(std::optional<double> x);         // "2.41x", "-"
std::string micros(std::optional<double> us);         // "31.2us", "1.23ms", "2.10s", "-"
std::string dollars(double usd);                      // "$0.0123", "$1.24"
std::string clock(double seconds);                    // "0:42", "12:03", "1:02:03"
std::string si(double value, std::string_view unit);  // "1.82 TB/s", "989 TFLOP/s"
// `part` of `whole` in `whole`'s prefix: "3.23 / 4.80 TB/s".
std::string si_of(double part, double whole, std::string_view unit);

// `text` broken into lines of at most `width` columns at spaces (long words are cut); newlines
// end lines.
std::vector<std::string> wrap(std::string_view text, int width);

// A run of text with one style; a Line is drawn left to right.
struct Span {
  std::string text;
  Style style;
};
using Line = std::vector<Span>;
// Draws `line` at (x, y) in at most `width` columns; returns the columns used.
int put_line(Canvas& c, int x, int y, const Line& line, int width);

// A horizontal gauge of `width` columns, `fraction` (0..1) of it filled.
void gauge(Canvas& c, int x, int y, int width, double fraction, Style filled);
// The eighth-block glyph for `eighths` (0..8) of a cell filled from the bottom.
std::string_view vbar(int eighths);

}  // namespace ok::tui::draw
