// The canvas: clipping, one column per cell whatever the text, the ASCII fallback; and the diff
// and syntax colouring the kernel diff draws with.
#include <gtest/gtest.h>

#include "tui/canvas.hpp"
#include "tui/diff.hpp"
#include "tui/draw.hpp"

namespace ok::tui {
namespace {

TEST(TuiCanvas, PutClipsToTheCanvasAndToMaxWidth) {
  Canvas c(8, 2);
  EXPECT_EQ(c.put(5, 0, "abcdef"), 3);
  EXPECT_EQ(c.row_text(0), "     abc");
  EXPECT_EQ(c.put(-2, 1, "xyz!"), 2);
  EXPECT_EQ(c.row_text(1), "z!      ");
  EXPECT_EQ(c.put(0, 1, "12345", {}, 3), 3);
  EXPECT_EQ(c.row_text(1), "123     ");
  EXPECT_EQ(c.put(0, 2, "off the canvas"), 0);
  EXPECT_EQ(c.put(0, 1, "a width computed below zero", {}, -3), 0);
  EXPECT_EQ(c.text(), "     abc\n123     ");
}

TEST(TuiCanvas, WideCombiningAndControlCharactersTakeOneCellAsQuestionMarks) {
  Canvas c(10, 1);
  EXPECT_EQ(c.put(0, 0, "a漢e\xcc\x81\tb\x01"), 7);
  EXPECT_EQ(c.row_text(0), "a?e? b?   ");
  Canvas d(4, 1);
  d.put(0, 0, "\xff\xfe");  // invalid UTF-8: one cell per byte
  EXPECT_EQ(d.row_text(0), "??  ");
}

TEST(TuiCanvas, AsciiModeDrawsTheFallbacks) {
  Canvas c(12, 3, true);
  c.box({0, 0, 12, 3}, "T", {});
  c.put(1, 1, "█░▁→✓…é");
  EXPECT_EQ(c.text(), "+- T ------+\n|#._>+~?   |\n+----------+");
  EXPECT_TRUE(c.ascii());
}

TEST(TuiCanvas, StylesStayWithTheirCells) {
  Canvas c(4, 1);
  const Style red{.fg = Color::Red, .bold = true};
  c.put(1, 0, "ab", red);
  EXPECT_EQ(c.at(1, 0).style, red);
  EXPECT_EQ(c.at(0, 0).style, Style{});
  c.paint({0, 0, 4, 1}, {.reverse = true});
  EXPECT_EQ(c.at(2, 0).glyph, "b");
  EXPECT_TRUE(c.at(2, 0).style.reverse);
  c.clear();
  EXPECT_EQ(c.at(1, 0), Cell{});
  EXPECT_EQ(c.at(99, 0), Cell{});  // outside: a blank
}

TEST(TuiCanvas, FitCutsWithAnEllipsisAndPads) {
  EXPECT_EQ(fit("abcdef", 4), "abc…");
  EXPECT_EQ(fit("ab", 4, true), "ab  ");
  EXPECT_EQ(fit("näive", 5), "näive");
  EXPECT_EQ(text_width("näive→"), 6);
}

TEST(TuiDraw, WrapBreaksAtSpacesAndCutsLongWords) {
  EXPECT_EQ(draw::wrap("the quick brown fox", 9),
            (std::vector<std::string>{"the quick", "brown fox"}));
  EXPECT_EQ(draw::wrap("abcdefghij k", 4), (std::vector<std::string>{"abcd", "efgh", "ij k"}));
  EXPECT_EQ(draw::wrap("a\n\nb", 10), (std::vector<std::string>{"a", "", "b"}));
  // Code keeps its indentation on every line it wraps to.
  EXPECT_EQ(draw::wrap("    x = tl.load(p)\n  \n", 14),
            (std::vector<std::string>{"    x =", "    tl.load(p)", "", ""}));
}

TEST(TuiDraw, NumbersReadAsEngineersWriteThem) {
  EXPECT_EQ(draw::speedup(2.4149), "2.41x");
  EXPECT_EQ(draw::speedup(std::nullopt), "-");
  EXPECT_EQ(draw::micros(19.43), "19.4us");
  EXPECT_EQ(draw::micros(1234.0), "1.23ms");
  EXPECT_EQ(draw::micros(2.5e6), "2.50s");
  EXPECT_EQ(draw::dollars(0.01234), "$0.0123");
  EXPECT_EQ(draw::dollars(12.5), "$12.50");
  EXPECT_EQ(draw::clock(754), "12:34");
  EXPECT_EQ(draw::clock(3723), "1:02:03");
  EXPECT_EQ(draw::si(3.46e12, "B/s"), "3.46 TB/s");
  EXPECT_EQ(draw::si(989e12, "FLOP/s"), "989 TFLOP/s");
  EXPECT_EQ(draw::verdict_short("compile_error"), "compile_err");
}

TEST(TuiDiff, PairsChangesAndFoldsLongUnchangedRuns) {
  const std::vector<std::string> a = {"1", "2", "3", "4", "5", "6", "7", "8", "9", "x", "y"};
  const std::vector<std::string> b = {"1", "2", "3", "4", "5", "6", "7", "8", "9", "X", "y", "z"};
  const auto rows = side_by_side(a, b, 2);
  using K = DiffRow::Kind;
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].kind, K::Fold);
  EXPECT_EQ(rows[0].folded, 7);
  EXPECT_EQ(rows[1].left, 7);
  EXPECT_EQ(rows[3].kind, K::Changed);
  EXPECT_EQ(rows[3].left, 9);
  EXPECT_EQ(rows[3].right, 9);
  EXPECT_EQ(rows[4].kind, K::Same);
  EXPECT_EQ(rows[5].kind, K::Added);
  EXPECT_EQ(rows[5].left, -1);
  EXPECT_EQ(rows[5].right, 11);
}

TEST(TuiDiff, RemovedLinesAndIdenticalInputs) {
  using K = DiffRow::Kind;
  const auto rows = side_by_side({"a", "b", "c"}, {"a", "c"}, 3);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].kind, K::Removed);
  EXPECT_EQ(rows[1].left, 1);
  const auto same = side_by_side({"a", "b"}, {"a", "b"}, 3);
  ASSERT_EQ(same.size(), 2u);
  EXPECT_EQ(same[1].kind, K::Same);
  EXPECT_EQ(split_lines("a\n\tb\r\n"), (std::vector<std::string>{"a", "    b"}));
}

TEST(TuiDiff, HighlightColoursKeywordsStringsCommentsAndNumbers) {
  const auto spans = highlight("    x = tl.load(p, other=\"a#b\")  # 128-bit");
  std::string all;
  for (const auto& s : spans) all += s.text;
  EXPECT_EQ(all, "    x = tl.load(p, other=\"a#b\")  # 128-bit");
  auto style_of = [&](std::string_view text) {
    for (const auto& s : spans)
      if (s.text == text) return s.style.fg;
    return Color::Black;
  };
  EXPECT_EQ(style_of("tl"), Color::Magenta);
  EXPECT_EQ(style_of("\"a#b\""), Color::Yellow);
  EXPECT_EQ(style_of("# 128-bit"), Color::Gray);
  const auto c = highlight("__global__ void k(float* x) { // CUDA");
  EXPECT_EQ(c[0].text, "__global__");
  EXPECT_EQ(c[0].style.fg, Color::Magenta);
  EXPECT_EQ(c.back().text, "// CUDA");
  EXPECT_EQ(highlight("@triton.jit")[0].style.fg, Color::Blue);
  EXPECT_EQ(highlight("n = 4096").back().style.fg, Color::Cyan);
}

}  // namespace
}  // namespace ok::tui
