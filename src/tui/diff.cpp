#include "tui/diff.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace ok::tui {

namespace {

using Kind = DiffRow::Kind;
constexpr size_t kMaxLines = 4000;

// Whether two lines are edits of one another: their common start and end (indentation aside)
// make at least half of them.
bool similar(std::string_view x, std::string_view y) {
  auto trim = [](std::string_view v) {
    v.remove_prefix(std::min(v.size(), v.find_first_not_of(' ')));
    return v;
  };
  x = trim(x);
  y = trim(y);
  size_t p = 0, q = 0;
  while (p < x.size() && p < y.size() && x[p] == y[p]) ++p;
  while (q < x.size() - p && q < y.size() - p && x[x.size() - 1 - q] == y[y.size() - 1 - q]) ++q;
  return x.size() + y.size() > 0 && 4 * (p + q) >= x.size() + y.size();
}

// A block of removed lines against the added lines at the same place, as rows: a line paired with
// its edit when there is one (a removed line with no counterpart stands alone), else in order.
void pair_block(const std::vector<std::string>& a, const std::vector<std::string>& b,
                const std::vector<int>& removed, const std::vector<int>& added,
                std::vector<DiffRow>& out) {
  const size_t r = removed.size(), n = added.size();
  const bool look = r * n <= 10000;  // the look-ahead is quadratic
  auto ahead = [&](const std::vector<int>& in, const std::vector<std::string>& side, size_t from,
                   const std::string& line) {
    for (size_t k = from; look && k < in.size(); ++k)
      if (similar(side[static_cast<size_t>(in[k])], line)) return true;
    return false;
  };
  size_t i = 0, j = 0;
  while (i < r || j < n) {
    Kind kind = i < r && j < n ? Kind::Changed : i < r ? Kind::Removed : Kind::Added;
    if (kind == Kind::Changed && look &&
        !similar(a[static_cast<size_t>(removed[i])], b[static_cast<size_t>(added[j])])) {
      const bool later_removed = ahead(removed, a, i + 1, b[static_cast<size_t>(added[j])]);
      const bool later_added = ahead(added, b, j + 1, a[static_cast<size_t>(removed[i])]);
      if (later_removed && !later_added) kind = Kind::Removed;
      if (later_added && !later_removed) kind = Kind::Added;
    }
    DiffRow row{kind, -1, -1, 0};
    if (kind != Kind::Added) row.left = removed[i++];
    if (kind != Kind::Removed) row.right = added[j++];
    out.push_back(row);
  }
}

// The longest common subsequence's pairs of the middle a[a0, a1) against b[b0, b1), as rows.
void diff_middle(const std::vector<std::string>& a, const std::vector<std::string>& b, int a0,
                 int a1, int b0, int b1, std::vector<DiffRow>& out) {
  const int n = a1 - a0, m = b1 - b0;
  std::vector<std::vector<int>> lcs;
  if (static_cast<size_t>(n) <= kMaxLines && static_cast<size_t>(m) <= kMaxLines) {
    lcs.assign(static_cast<size_t>(n) + 1, std::vector<int>(static_cast<size_t>(m) + 1, 0));
    for (int i = n - 1; i >= 0; --i)
      for (int j = m - 1; j >= 0; --j)
        lcs[i][j] =
            a[a0 + i] == b[b0 + j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  std::vector<int> removed, added;
  auto flush = [&] {
    pair_block(a, b, removed, added, out);
    removed.clear();
    added.clear();
  };
  int i = 0, j = 0;
  while (i < n || j < m) {
    if (!lcs.empty() && i < n && j < m && a[a0 + i] == b[b0 + j]) {
      flush();
      out.push_back({Kind::Same, a0 + i, b0 + j, 0});
      ++i, ++j;
    } else if (j >= m || (i < n && (lcs.empty() || lcs[i + 1][j] >= lcs[i][j + 1]))) {
      removed.push_back(a0 + i++);
    } else {
      added.push_back(b0 + j++);
    }
  }
  flush();
}

// Unchanged runs longer than 2 * context + 1 keep `context` lines next to each change.
// Identical sources stay whole.
std::vector<DiffRow> fold(const std::vector<DiffRow>& rows, int context) {
  if (std::all_of(rows.begin(), rows.end(), [](const DiffRow& r) { return r.kind == Kind::Same; }))
    return rows;
  std::vector<DiffRow> out;
  size_t i = 0;
  while (i < rows.size()) {
    if (rows[i].kind != Kind::Same) {
      out.push_back(rows[i++]);
      continue;
    }
    size_t j = i;
    while (j < rows.size() && rows[j].kind == Kind::Same) ++j;
    const int head = i == 0 ? 0 : context, tail = j == rows.size() ? 0 : context;
    const int run = static_cast<int>(j - i);
    if (run > head + tail + 1) {
      out.insert(out.end(), rows.begin() + static_cast<std::ptrdiff_t>(i),
                 rows.begin() + static_cast<std::ptrdiff_t>(i) + head);
      out.push_back({Kind::Fold, -1, -1, run - head - tail});
      out.insert(out.end(), rows.begin() + static_cast<std::ptrdiff_t>(j) - tail,
                 rows.begin() + static_cast<std::ptrdiff_t>(j));
    } else {
      out.insert(out.end(), rows.begin() + static_cast<std::ptrdiff_t>(i),
                 rows.begin() + static_cast<std::ptrdiff_t>(j));
    }
    i = j;
  }
  return out;
}

bool is_keyword(std::string_view w) {
  static constexpr std::array<std::string_view, 62> kWords = {"and",
                                                              "as",
                                                              "assert",
                                                              "break",
                                                              "class",
                                                              "continue",
                                                              "def",
                                                              "del",
                                                              "elif",
                                                              "else",
                                                              "except",
                                                              "finally",
                                                              "for",
                                                              "from",
                                                              "global",
                                                              "if",
                                                              "import",
                                                              "in",
                                                              "is",
                                                              "lambda",
                                                              "nonlocal",
                                                              "not",
                                                              "or",
                                                              "pass",
                                                              "raise",
                                                              "return",
                                                              "try",
                                                              "while",
                                                              "with",
                                                              "yield",
                                                              "None",
                                                              "True",
                                                              "False",
                                                              "self",
                                                              "__global__",
                                                              "__device__",
                                                              "__shared__",
                                                              "__restrict__",
                                                              "__syncthreads",
                                                              "const",
                                                              "constexpr",
                                                              "void",
                                                              "int",
                                                              "float",
                                                              "double",
                                                              "half",
                                                              "bool",
                                                              "char",
                                                              "unsigned",
                                                              "auto",
                                                              "struct",
                                                              "template",
                                                              "typename",
                                                              "static",
                                                              "inline",
                                                              "switch",
                                                              "case",
                                                              "do",
                                                              "namespace",
                                                              "using",
                                                              "include",
                                                              "tl"};
  return std::find(kWords.begin(), kWords.end(), w) != kWords.end();
}

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

}  // namespace

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> out;
  std::string line;
  for (char c : text) {
    if (c == '\n') {
      out.push_back(std::move(line));
      line.clear();
    } else if (c == '\t') {
      line.append(4 - line.size() % 4, ' ');
    } else if (c != '\r') {
      line += c;
    }
  }
  if (!line.empty()) out.push_back(std::move(line));
  return out;
}

namespace {

std::vector<DiffRow> compute_side_by_side(const std::vector<std::string>& a,
                                          const std::vector<std::string>& b, int context);

// The key of one diff: both texts' hashes and sizes, and the context.
struct DiffKey {
  size_t ha = 0, hb = 0, na = 0, nb = 0;
  int context = 0;
  bool operator==(const DiffKey&) const = default;
};

size_t hash_lines(const std::vector<std::string>& lines) {
  size_t h = lines.size();
  for (const auto& l : lines) h = h * 1000003u ^ std::hash<std::string>{}(l);
  return h;
}

}  // namespace

// The UI redraws a few times a second while nothing changes, and an LCS over thousands of lines
// costs tens of milliseconds: the last few diffs are kept (per thread; the UI draws on one).
std::vector<DiffRow> side_by_side(const std::vector<std::string>& a,
                                  const std::vector<std::string>& b, int context) {
  thread_local std::vector<std::pair<DiffKey, std::vector<DiffRow>>> memo;
  const DiffKey key{hash_lines(a), hash_lines(b), a.size(), b.size(), context};
  for (const auto& [k, rows] : memo)
    if (k == key) return rows;
  auto rows = compute_side_by_side(a, b, context);
  if (memo.size() >= 4) memo.erase(memo.begin());
  memo.emplace_back(key, rows);
  return rows;
}

namespace {

std::vector<DiffRow> compute_side_by_side(const std::vector<std::string>& a,
                                          const std::vector<std::string>& b, int context) {
  int a0 = 0, b0 = 0, a1 = static_cast<int>(a.size()), b1 = static_cast<int>(b.size());
  std::vector<DiffRow> rows;
  while (a0 < a1 && b0 < b1 && a[a0] == b[b0]) {
    rows.push_back({Kind::Same, a0, b0, 0});
    ++a0, ++b0;
  }
  std::vector<DiffRow> tail;
  while (a1 > a0 && b1 > b0 && a[a1 - 1] == b[b1 - 1]) {
    --a1, --b1;
    tail.push_back({Kind::Same, a1, b1, 0});
  }
  diff_middle(a, b, a0, a1, b0, b1, rows);
  rows.insert(rows.end(), tail.rbegin(), tail.rend());
  return fold(rows, context);
}

}  // namespace

draw::Line highlight(std::string_view line, Style base) {
  const Style keyword{.fg = Color::Magenta, .bold = base.bold};
  const Style string{.fg = Color::Yellow};
  const Style comment{.fg = Color::Gray};
  const Style number{.fg = Color::Cyan};
  const Style decorator{.fg = Color::Blue};
  draw::Line out;
  auto add = [&](std::string_view text, Style st) {
    if (!out.empty() && out.back().style == st)
      out.back().text += text;
    else
      out.push_back({std::string(text), st});
  };
  size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (c == '#' || (c == '/' && i + 1 < line.size() && line[i + 1] == '/')) {
      const bool directive =
          c == '#' && line.find_first_not_of(' ') == i && line.compare(i, 8, "#include") == 0;
      add(line.substr(i), directive ? keyword : comment);
      break;
    }
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < line.size() && line[j] != c) j += line[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, line.size());
      add(line.substr(i, j - i), string);
      i = j;
    } else if (c == '@' && line.find_first_not_of(' ') == i) {
      add(line.substr(i), decorator);
      break;
    } else if (word_char(c)) {
      size_t j = i;
      while (j < line.size() && word_char(line[j])) ++j;
      const std::string_view w = line.substr(i, j - i);
      add(w, std::isdigit(static_cast<unsigned char>(c)) ? number : is_keyword(w) ? keyword : base);
      i = j;
    } else {
      add(line.substr(i, 1), base);
      ++i;
    }
  }
  return out;
}

}  // namespace ok::tui
