// The terminal UI's drawing surface: a width x height grid of one-column cells, each a glyph and
// a Style. The panels draw into a Canvas; the terminal layer (terminal.hpp) copies it to the
// screen, cell by cell, only where it changed. No terminal I/O here, so the render tests compare
// canvas.text() against expected text.
//
// Text is UTF-8. A character that does not take exactly one column (wide East Asian characters,
// emoji, combining marks, control characters) is drawn as '?', so that columns always line up.
// In ASCII mode (a terminal whose locale is not UTF-8) every glyph outside ASCII is drawn by its
// ASCII fallback (box lines as - | +, bars as #, ...).
//
// Not thread-safe: one thread draws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ok::tui {

enum class Color : uint8_t { Default, Black, Red, Green, Yellow, Blue, Magenta, Cyan, White, Gray };

struct Style {
  Color fg = Color::Default, bg = Color::Default;
  bool bold = false, dim = false, reverse = false, underline = false;
  friend bool operator==(const Style&, const Style&) = default;
};

struct Cell {
  std::string glyph = " ";
  Style style;
  friend bool operator==(const Cell&, const Cell&) = default;
};

// A rectangle of the canvas, in cells.
struct Rect {
  int x = 0, y = 0, w = 0, h = 0;
  bool empty() const { return w <= 0 || h <= 0; }
};

class Canvas {
 public:
  Canvas(int width, int height, bool ascii = false);
  int width() const { return width_; }
  int height() const { return height_; }
  bool ascii() const { return ascii_; }
  void clear();

  // Writes `text` from (x, y), clipped to the canvas and to `max_width` columns when >= 0 (-1:
  // no limit; a width computed below -1 writes nothing); returns the columns written. Cells left
  // of the canvas are skipped, not shifted.
  int put(int x, int y, std::string_view text, Style style = {}, int max_width = -1);
  // Sets the style of the cells of `r` (clipped), keeping their glyphs.
  void paint(Rect r, Style style);
  // Fills `r` (clipped) with blanks of `style`.
  void fill(Rect r, Style style = {});
  // A one-line box around `r` with `title` in its top border; `style` for the lines.
  void box(Rect r, std::string_view title, Style style = {}, Style title_style = {});

  const Cell& at(int x, int y) const;
  std::string row_text(int y) const;  // glyphs only, trailing spaces kept
  std::string text() const;           // rows joined with '\n'

 private:
  int width_, height_;
  bool ascii_;
  std::vector<Cell> cells_;
};

// The number of columns `text` takes on a Canvas (one per code point).
int text_width(std::string_view text);
// `text` cut to `width` columns, ending in "…" when cut; padded with spaces to `width` when `pad`.
std::string fit(std::string_view text, int width, bool pad = false);
// The ASCII fallback of one glyph ("?" when it has none).
std::string_view ascii_fallback(std::string_view glyph);

}  // namespace ok::tui
