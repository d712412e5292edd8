#include "tui/keys.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace ok::tui {

namespace {

constexpr std::array<Panel, 5> kFocusOrder = {Panel::Agent, Panel::Trajectory, Panel::Profiling,
                                              Panel::Log, Panel::Diff};
constexpr int kPage = 10;

bool is(int key, Key k) {
  return key == static_cast<int>(k);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void append_utf8(std::string& s, int cp) {
  const auto c = static_cast<unsigned>(cp);
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
}

void pop_utf8(std::string& s) {
  while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
  if (!s.empty()) s.pop_back();
}

Panel next_focus(Panel p, int step) {
  const auto it = std::find(kFocusOrder.begin(), kFocusOrder.end(), p);
  const int i = static_cast<int>(it - kFocusOrder.begin());
  const int n = static_cast<int>(kFocusOrder.size());
  return kFocusOrder[static_cast<size_t>(((i + step) % n + n) % n)];
}

// The filter prompt has the keyboard.
void edit_filter(int key, UiState& ui, const Snapshot& s) {
  if (is(key, Key::Enter)) {
    ui.filtering = false;
  } else if (is(key, Key::Escape)) {
    ui.filtering = false;
    ui.filter.clear();
  } else if (is(key, Key::Backspace)) {
    pop_utf8(ui.filter);
  } else if (key >= 0x20 && key < 0x110000 && key != 0x7F) {
    append_utf8(ui.filter, key);
  }
  const auto list = filtered(s, ui.filter);
  if (std::none_of(list.begin(), list.end(),
                   [&](const AttemptView* a) { return a->number == ui.selected; }))
    ui.selected = -1;
}

// Up/Down and their pages move the selection among the listed attempts; -1 follows the newest.
void move_selection(int key, UiState& ui, const Snapshot& s) {
  const auto list = filtered(s, ui.filter);
  if (list.empty()) return;
  const int n = static_cast<int>(list.size());
  int i = n - 1;
  for (int k = 0; k < n; ++k)
    if (list[static_cast<size_t>(k)]->number == ui.selected) i = k;
  if (is(key, Key::Up) || key == 'k')
    --i;
  else if (is(key, Key::Down) || key == 'j')
    ++i;
  else if (is(key, Key::PageUp))
    i -= kPage;
  else if (is(key, Key::PageDown))
    i += kPage;
  else if (is(key, Key::Home) || key == 'g')
    i = 0;
  else if (is(key, Key::End) || key == 'G')
    i = n;
  const int before = ui.selected;
  ui.selected = i >= n ? -1 : list[static_cast<size_t>(std::max(0, i))]->number;
  if (ui.selected != before) ui.diff_scroll = 0;
}

// Up/Down and their pages scroll: `scroll` counts rows down from the top (the diff) or, when
// `backwards`, rows back from the newest (the agent's text).
void move_scroll(int key, int& scroll, bool backwards) {
  constexpr int kFar = 100000;  // the panel clamps it to what there is
  int down = 0;
  if (is(key, Key::Up) || key == 'k')
    down = -1;
  else if (is(key, Key::Down) || key == 'j')
    down = 1;
  else if (is(key, Key::PageUp))
    down = -kPage * 2;
  else if (is(key, Key::PageDown))
    down = kPage * 2;
  if (is(key, Key::Home) || key == 'g')
    scroll = backwards ? kFar : 0;
  else if (is(key, Key::End) || key == 'G')
    scroll = backwards ? 0 : kFar;
  else
    scroll = std::clamp(scroll + (backwards ? -down : down), 0, kFar);
}

bool is_motion(int key) {
  return is(key, Key::Up) || is(key, Key::Down) || is(key, Key::PageUp) || is(key, Key::PageDown) ||
         is(key, Key::Home) || is(key, Key::End) || key == 'j' || key == 'k' || key == 'g' ||
         key == 'G';
}

}  // namespace

std::vector<const AttemptView*> filtered(const Snapshot& s, const std::string& filter) {
  std::vector<std::string> words;
  std::string f = lower(filter);
  for (size_t i = 0; i < f.size();) {
    size_t j = f.find(' ', i);
    if (j == std::string::npos) j = f.size();
    if (j > i) words.push_back(f.substr(i, j - i));
    i = j + 1;
  }
  // A word matches where a word of the attempt starts with it: "correct" is not "incorrect".
  auto at_word_start = [](const std::string& hay, const std::string& w) {
    for (size_t p = hay.find(w); p != std::string::npos; p = hay.find(w, p + 1))
      if (p == 0 || !std::isalnum(static_cast<unsigned char>(hay[p - 1]))) return true;
    return false;
  };
  std::vector<const AttemptView*> out;
  for (const auto& a : s.attempts) {
    std::string hay = "#" + std::to_string(a.number) + " " + a.verdict + " " + a.description + " " +
                      a.intent + " " + a.generator;
    for (const auto& fl : a.flags) hay += " " + fl;
    hay = lower(hay);
    if (std::all_of(words.begin(), words.end(),
                    [&](const std::string& w) { return at_word_start(hay, w); }))
      out.push_back(&a);
  }
  return out;
}

const AttemptView* selected_attempt(const Snapshot& s, const UiState& ui) {
  const auto list = filtered(s, ui.filter);
  for (const auto* a : list)
    if (a->number == ui.selected) return a;
  return list.empty() ? nullptr : list.back();
}

Command handle_key(int key, UiState& ui, const Snapshot& s) {
  if (is(key, Key::Resize)) return Command::None;
  if (ui.filtering) {
    edit_filter(key, ui, s);
    return Command::None;
  }
  if (ui.help && (key == '?' || is(key, Key::Escape) || is(key, Key::Enter))) {
    ui.help = false;
    return Command::None;
  }
  ui.help = false;
  switch (key) {
    case 'q':
      return Command::Quit;
    case 'p':
      return Command::TogglePause;
    case 's':
      return Command::Stop;
    case '?':
      ui.help = true;
      return Command::None;
    case '/':
      ui.filtering = true;
      return Command::None;
    case 'd':
      ui.diff_vs_previous = !ui.diff_vs_previous;
      ui.diff_scroll = 0;
      return Command::None;
    default:
      break;
  }
  if (key >= '1' && key < '1' + static_cast<int>(kFocusOrder.size())) {
    ui.focus = static_cast<Panel>(key - '1');
    return Command::None;
  }
  if (is(key, Key::Escape)) {
    if (ui.detail)
      ui.detail = false;
    else
      ui.filter.clear();
  } else if (is(key, Key::Enter)) {
    ui.detail = !ui.detail && selected_attempt(s, ui) != nullptr;
    ui.diff_scroll = 0;
  } else if (is(key, Key::Tab) || is(key, Key::Right) || key == 'l') {
    ui.focus = next_focus(ui.focus, 1);
  } else if (is(key, Key::BackTab) || is(key, Key::Left) || key == 'h') {
    ui.focus = next_focus(ui.focus, -1);
  } else if (is_motion(key)) {
    if (ui.detail || ui.focus == Panel::Diff)
      move_scroll(key, ui.diff_scroll, false);
    else if (ui.focus == Panel::Agent)
      move_scroll(key, ui.agent_scroll, true);
    else
      move_selection(key, ui, s);
  }
  return Command::None;
}

}  // namespace ok::tui
