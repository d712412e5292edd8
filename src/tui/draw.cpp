#include "tui/draw.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace ok::tui::draw {

Style verdict_style(std::string_view v) {
  if (v == "correct") return kGood;
  if (v == "incorrect" || v == "rejected" || v == "runtime_error" || v == "compile_error")
    return kBad;
  if (v == "timeout" || v == "evaluator_error") return kWarn;
  return kDim;
}

std::string verdict_short(std::string_view v, int width) {
  static constexpr std::array<std::array<std::string_view, 3>, 7> kNames = {{
      {"compile_error", "compile_err", "compile"},
      {"runtime_error", "runtime_err", "runtime"},
      {"generation_failed", "gen_failed", "genfail"},
      {"evaluator_error", "eval_error", "evalerr"},
      {"incorrect", "incorrect", "wrong"},
      {"unsupported", "unsupported", "unsupp"},
      {"correct", "correct", "correct"},
  }};
  for (const auto& n : kNames)
    if (n[0] == v) return std::string(width >= 11 ? n[1] : n[2]);
  return fit(v, width);
}

std::string speedup(std::optional<double> x) {
  if (!x) return "-";
  if (*x >= 100) return fmt::format("{:.0f}x", *x);
  return fmt::format("{:.2f}x", *x);
}

std::string micros(std::optional<double> us) {
  if (!us) return "-";
  if (*us < 1000) return fmt::format("{:.1f}us", *us);
  if (*us < 1e6) return fmt::format("{:.2f}ms", *us / 1e3);
  return fmt::format("{:.2f}s", *us / 1e6);
}

std::string dollars(double usd) {
  return usd < 1 ? fmt::format("${:.4f}", usd) : fmt::format("${:.2f}", usd);
}

std::string clock(double seconds) {
  const auto t = static_cast<long>(std::max(0.0, seconds));
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

namespace {

constexpr std::array<std::pair<double, const char*>, 5> kPrefix = {
    {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}};

std::pair<double, const char*> prefix_of(double value) {
  for (const auto& p : kPrefix)
    if (std::fabs(value) >= p.first) return p;
  return {1, ""};
}

// Three significant digits, or all of the integer part.
std::string number(double v) {
  const double a = std::fabs(v);
  return a >= 100  ? fmt::format("{:.0f}", v)
         : a >= 10 ? fmt::format("{:.1f}", v)
                   : fmt::format("{:.2f}", v);
}

}  // namespace

std::string si(double value, std::string_view unit) {
  const auto [scale, p] = prefix_of(value);
  return fmt::format("{} {}{}", number(value / scale), p, unit);
}

std::string si_of(double part, double whole, std::string_view unit) {
  const auto [scale, p] = prefix_of(whole);
  return fmt::format("{} / {} {}{}", number(part / scale), number(whole / scale), p, unit);
}

std::vector<std::string> wrap(std::string_view text, int width) {
  std::vector<std::string> out;
  if (width <= 0) return out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view para = text.substr(start, nl - start);
    // A paragraph's indentation (code) starts each of its lines.
    const size_t first = para.find_first_not_of(' ');
    const std::string lead(
        first == std::string_view::npos ? 0 : std::min(first, static_cast<size_t>(width / 2)), ' ');
    para.remove_prefix(lead.size());
    std::string line = lead;
    int w = static_cast<int>(lead.size());
    const int base = w;
    size_t i = 0;
    while (i < para.size()) {
      size_t j = para.find(' ', i);
      if (j == std::string_view::npos) j = para.size();
      std::string_view word = para.substr(i, j - i);
      int ww = text_width(word);
      if (w > base && w + 1 + ww > width) {
        out.push_back(std::move(line));
        line = lead;
        w = base;
      }
      while (w + ww > width) {  // a word longer than a line: cut it
        size_t cut = 0;
        for (int k = 0; k < width - w; ++k) {
          size_t n = 1;
          while (cut + n < word.size() &&
                 (static_cast<unsigned char>(word[cut + n]) & 0xC0) == 0x80)
            ++n;
          cut += n;
        }
        line += word.substr(0, cut);
        out.push_back(std::move(line));
        line = lead;
        w = base;
        word.remove_prefix(cut);
        ww = text_width(word);
      }
      if (w > base) {
        line += ' ';
        ++w;
      }
      line += word;
      w += ww;
      i = j + 1;
    }
    out.push_back(std::move(line));
    if (nl == text.size()) break;
    start = nl + 1;
  }
  return out;
}

int put_line(Canvas& c, int x, int y, const Line& line, int width) {
  int used = 0;
  for (const auto& span : line) {
    if (used >= width) break;
    used += c.put(x + used, y, span.text, span.style, width - used);
  }
  return used;
}

void gauge(Canvas& c, int x, int y, int width, double fraction, Style filled) {
  const double f = std::clamp(std::isfinite(fraction) ? fraction : 0.0, 0.0, 1.0);
  const int full = static_cast<int>(std::lround(f * width));
  for (int i = 0; i < width; ++i) c.put(x + i, y, i < full ? "█" : "░", i < full ? filled : kDim);
}

std::string_view vbar(int eighths) {
  static constexpr std::array<std::string_view, 9> kBars = {" ", "▁", "▂", "▃", "▄",
                                                            "▅", "▆", "▇", "█"};
  return kBars[static_cast<size_t>(std::clamp(eighths, 0, 8))];
}

}  // namespace ok::tui::draw
