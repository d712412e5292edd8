#include "tui/canvas.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace ok::tui {

namespace {

// One UTF-8 character of `s` from `i`: its code point and its bytes (an invalid byte is taken
// alone, as U+FFFD).
std::pair<char32_t, size_t> decode(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return {b, 1};
  size_t n = b >= 0xF0 && b < 0xF8 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 && b < 0xE0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return {0xFFFD, 1};
  char32_t cp = b & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return {0xFFFD, 1};
    cp = (cp << 6) | (c & 0x3F);
  }
  return {cp, n};
}

// Whether `cp` takes exactly one terminal column (a sufficient table for the glyphs models and
// kernels print: combining marks, zero-width characters, wide East Asian ranges and emoji).
bool one_column(char32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0) || cp == 0xFFFD) return false;
  static constexpr std::array<std::pair<char32_t, char32_t>, 17> kNotOne = {{
      {0x0300, 0x036F},
      {0x0483, 0x0489},
      {0x0591, 0x05BD},
      {0x1100, 0x115F},
      {0x1AB0, 0x1AFF},
      {0x1DC0, 0x1DFF},
      {0x200B, 0x200F},
      {0x2028, 0x202E},
      {0x20D0, 0x20FF},
      {0x2E80, 0xA4CF},
      {0xAC00, 0xD7A3},
      {0xF900, 0xFAFF},
      {0xFE00, 0xFE0F},
      {0xFE20, 0xFE6F},
      {0xFF00, 0xFF60},
      {0xFFE0, 0xFFE6},
      {0x1F000, 0x10FFFF},
  }};
  return std::none_of(kNotOne.begin(), kNotOne.end(),
                      [cp](const auto& r) { return cp >= r.first && cp <= r.second; });
}

}  // namespace

std::string_view ascii_fallback(std::string_view glyph) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 55> kTable = {{
      {"─", "-"}, {"━", "-"}, {"┄", "-"}, {"┈", "-"}, {"╌", "-"}, {"═", "="}, {"│", "|"},
      {"┃", "|"}, {"║", "|"}, {"┆", ":"}, {"┌", "+"}, {"┐", "+"}, {"└", "+"}, {"┘", "+"},
      {"├", "+"}, {"┤", "+"}, {"┬", "+"}, {"┴", "+"}, {"┼", "+"}, {"╭", "+"}, {"╮", "+"},
      {"╰", "+"}, {"╯", "+"}, {"▁", "_"}, {"▂", "_"}, {"▃", "."}, {"▄", "o"}, {"▅", "o"},
      {"▆", "O"}, {"▇", "#"}, {"█", "#"}, {"░", "."}, {"▒", ":"}, {"·", "."}, {"•", "*"},
      {"●", "*"}, {"○", "o"}, {"◆", "*"}, {"▶", ">"}, {"▸", ">"}, {"▾", "v"}, {"↑", "^"},
      {"↓", "v"}, {"←", "<"}, {"→", ">"}, {"…", "~"}, {"✓", "+"}, {"✗", "x"}, {"×", "x"},
      {"★", "*"}, {"≥", ">"}, {"⏎", "<"}, {"‖", "="}, {"■", "#"}, {"▲", "^"},
  }};
  for (const auto& [g, a] : kTable)
    if (g == glyph) return a;
  return "?";
}

int text_width(std::string_view text) {
  int n = 0;
  for (size_t i = 0; i < text.size(); i += decode(text, i).second) ++n;
  return n;
}

std::string fit(std::string_view text, int width, bool pad) {
  if (width <= 0) return {};
  std::string out;
  int n = 0;
  size_t i = 0;
  const int total = text_width(text);
  while (i < text.size() && n < width) {
    if (total > width && n == width - 1) {
      out += "…";
      ++n;
      break;
    }
    const size_t len = decode(text, i).second;
    out.append(text.substr(i, len));
    i += len;
    ++n;
  }
  if (pad) out.append(static_cast<size_t>(width - n), ' ');
  return out;
}

Canvas::Canvas(int width, int height, bool ascii)
    : width_(std::max(0, width)),
      height_(std::max(0, height)),
      ascii_(ascii),
      cells_(static_cast<size_t>(width_) * static_cast<size_t>(height_)) {}

void Canvas::clear() {
  std::fill(cells_.begin(), cells_.end(), Cell{});
}

int Canvas::put(int x, int y, std::string_view text, Style style, int max_width) {
  if (y < 0 || y >= height_ || max_width < -1) return 0;
  const int end = max_width >= 0 ? std::min(width_, x + max_width) : width_;
  int col = x, written = 0;
  for (size_t i = 0; i < text.size() && col < end;) {
    auto [cp, len] = decode(text, i);
    std::string_view glyph = text.substr(i, len);
    i += len;
    if (cp == '\t')
      glyph = " ";
    else if (!one_column(cp))
      glyph = "?";
    else if (ascii_ && cp >= 0x80)
      glyph = ascii_fallback(glyph);
    if (col >= 0) {
      Cell& c = cells_[static_cast<size_t>(y) * width_ + col];
      c.glyph.assign(glyph);
      c.style = style;
      ++written;
    }
    ++col;
  }
  return written;
}

void Canvas::paint(Rect r, Style style) {
  for (int y = std::max(0, r.y); y < std::min(height_, r.y + r.h); ++y)
    for (int x = std::max(0, r.x); x < std::min(width_, r.x + r.w); ++x)
      cells_[static_cast<size_t>(y) * width_ + x].style = style;
}

void Canvas::fill(Rect r, Style style) {
  for (int y = std::max(0, r.y); y < std::min(height_, r.y + r.h); ++y)
    for (int x = std::max(0, r.x); x < std::min(width_, r.x + r.w); ++x)
      cells_[static_cast<size_t>(y) * width_ + x] = Cell{" ", style};
}

void Canvas::box(Rect r, std::string_view title, Style style, Style title_style) {
  if (r.w < 2 || r.h < 2) return;
  const int right = r.x + r.w - 1, bottom = r.y + r.h - 1;
  for (int x = r.x + 1; x < right; ++x) {
    put(x, r.y, "─", style);
    put(x, bottom, "─", style);
  }
  for (int y = r.y + 1; y < bottom; ++y) {
    put(r.x, y, "│", style);
    put(right, y, "│", style);
  }
  put(r.x, r.y, "╭", style);
  put(right, r.y, "╮", style);
  put(r.x, bottom, "╰", style);
  put(right, bottom, "╯", style);
  if (!title.empty() && r.w > 6) {
    const std::string t = " " + fit(title, r.w - 6) + " ";
    put(r.x + 2, r.y, t, title_style);
  }
}

const Cell& Canvas::at(int x, int y) const {
  static const Cell kOutside;
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return kOutside;
  return cells_[static_cast<size_t>(y) * width_ + x];
}

std::string Canvas::row_text(int y) const {
  std::string s;
  for (int x = 0; x < width_; ++x) s += at(x, y).glyph;
  return s;
}

std::string Canvas::text() const {
  std::string s;
  for (int y = 0; y < height_; ++y) {
    if (y) s += '\n';
    s += row_text(y);
  }
  return s;
}

}  // namespace ok::tui
