#include "util/strings.hpp"

#include <fmt/chrono.h>
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <random>

namespace ok::util {

bool is_utf8(std::string_view s) {
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};  // shortest form per length
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;  // continuation bytes that follow
    if (c >= 0x80) {
      if ((c >> 5) == 0x6)
        n = 1;
      else if ((c >> 4) == 0xE)
        n = 2;
      else if ((c >> 3) == 0x1E)
        n = 3;
      else
        return false;
    }
    if (n > s.size() - i - 1) return false;
    uint32_t cp = n == 0 ? c : c & (0x3Fu >> n);
    for (size_t k = 1; k <= n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3Fu);
    }
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string trim(std::string_view s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(ws);
  return std::string(s.substr(b, e - b + 1));
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.starts_with(prefix);
}

static bool parse_int(std::string_view s, int& v) {
  auto t = trim(s);
  if (t.empty()) return false;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec == std::errc() && p == t.data() + t.size() && v >= 0;
}

constexpr int kMaxRangeSpan = 100000;

std::string time_id(std::string_view prefix) {
  std::random_device rd;
  auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  return fmt::format("{}{:%Y%m%d-%H%M%S}-{:04x}", prefix, now, rd() & 0xffff);
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

bool parse_id_ranges(std::string_view spec, std::vector<int>& out, std::string& error) {
  out.clear();
  for (const auto& part : split(spec, ',')) {
    auto dash = part.find('-');
    int a = 0, b = 0;
    if (dash == std::string::npos) {
      if (!parse_int(part, a)) {
        out.clear();
        error = "'" + part + "' is not a problem number";
        return false;
      }
      b = a;
    } else if (!parse_int(std::string_view(part).substr(0, dash), a) ||
               !parse_int(std::string_view(part).substr(dash + 1), b) || b < a) {
      out.clear();
      error = "'" + part + "' is not a range like 1-20";
      return false;
    }
    if (b - a > kMaxRangeSpan) {
      out.clear();
      error = "'" + part + "' spans more than " + std::to_string(kMaxRangeSpan) + " numbers";
      return false;
    }
    for (long long i = a; i <= b; ++i) out.push_back(static_cast<int>(i));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return true;
}

bool parse_header_line(std::string_view line, std::string& name, std::string& value) {
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  name.assign(line.substr(0, colon));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view v = line.substr(colon + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' '))
    v.remove_suffix(1);
  value.assign(v);
  return true;
}

}  // namespace ok::util
