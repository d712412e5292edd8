// handle_key: the run's commands, focus, selection, scrolling, the filter and the overlays.
#include <gtest/gtest.h>

#include "fixture.hpp"
#include "tui/keys.hpp"

namespace ok::tui {
namespace {

int k(Key key) {
  return static_cast<int>(key);
}

TEST(TuiKeys, CommandsForTheRun) {
  const Snapshot s = testing::session_snapshot();
  UiState ui;
  EXPECT_EQ(handle_key('q', ui, s), Command::Quit);
  EXPECT_EQ(handle_key('p', ui, s), Command::TogglePause);
  EXPECT_EQ(handle_key('s', ui, s), Command::Stop);
  EXPECT_EQ(handle_key(k(Key::Resize), ui, s), Command::None);
  EXPECT_EQ(handle_key('x', ui, s), Command::None);
}

TEST(TuiKeys, TabArrowsAndDigitsMoveTheFocus) {
  const Snapshot s = testing::session_snapshot();
  UiState ui;
  EXPECT_EQ(ui.focus, Panel::Log);
  handle_key(k(Key::Tab), ui, s);
  EXPECT_EQ(ui.focus, Panel::Diff);
  handle_key(k(Key::Tab), ui, s);
  EXPECT_EQ(ui.focus, Panel::Agent);
  handle_key(k(Key::BackTab), ui, s);
  EXPECT_EQ(ui.focus, Panel::Diff);
  handle_key(k(Key::Left), ui, s);
  EXPECT_EQ(ui.focus, Panel::Log);
  handle_key(k(Key::Right), ui, s);
  EXPECT_EQ(ui.focus, Panel::Diff);
  handle_key('3', ui, s);
  EXPECT_EQ(ui.focus, Panel::Profiling);
}

TEST(TuiKeys, UpAndDownSelectAttemptsAndEndFollowsTheNewest) {
  const Snapshot s = testing::session_snapshot();
  UiState ui;
  EXPECT_EQ(selected_attempt(s, ui)->number, 13);  // following the newest
  handle_key(k(Key::Up), ui, s);
  EXPECT_EQ(ui.selected, 12);
  handle_key('k', ui, s);
  EXPECT_EQ(ui.selected, 11);
  handle_key(k(Key::PageUp), ui, s);
  EXPECT_EQ(ui.selected, 1);
  handle_key(k(Key::Down), ui, s);
  EXPECT_EQ(ui.selected, 2);
  handle_key(k(Key::Home), ui, s);
  EXPECT_EQ(ui.selected, 1);
  handle_key(k(Key::End), ui, s);
  EXPECT_EQ(ui.selected, -1);
  ui.selected = 13;
  handle_key(k(Key::Down), ui, s);  // past the newest: follow again
  EXPECT_EQ(ui.selected, -1);
}

TEST(TuiKeys, TheDiffAndTheAgentScroll) {
  const Snapshot s = testing::session_snapshot();
  UiState ui;
  ui.focus = Panel::Diff;
  handle_key(k(Key::Down), ui, s);
  handle_key(k(Key::PageDown), ui, s);
  EXPECT_EQ(ui.diff_scroll, 21);
  handle_key(k(Key::Home), ui, s);
  EXPECT_EQ(ui.diff_scroll, 0);
  handle_key(k(Key::Up), ui, s);
  EXPECT_EQ(ui.diff_scroll, 0);
  ui.focus = Panel::Agent;
  handle_key(k(Key::Up), ui, s);  // back into the agent's text
  EXPECT_EQ(ui.agent_scroll, 1);
  handle_key(k(Key::End), ui, s);
  EXPECT_EQ(ui.agent_scroll, 0);
  EXPECT_EQ(ui.selected, -1);  // scrolling never moved the selection
}

TEST(TuiKeys, EnterOpensTheAttemptAndEscapeClosesIt) {
  const Snapshot s = testing::session_snapshot();
  UiState ui;
  handle_key(k(Key::Enter), ui, s);
  EXPECT_TRUE(ui.detail);
  handle_key(k(Key::Down), ui, s);  // full screen: arrows scroll the diff
  EXPECT_EQ(ui.diff_scroll, 1);
  handle_key(k(Key::Escape), ui, s);
  EXPECT_FALSE(ui.detail);
  UiState none;
  handle_key(k(Key::Enter), none, Snapshot{});
  EXPECT_FALSE(none.detail);  // nothing to open
}

TEST(TuiKeys, DTogglesTheDiffBase) {
  const Snapshot s = testing::session_snapshot();
  UiState ui;
  ui.diff_scroll = 5;
  handle_key('d', ui, s);
  EXPECT_TRUE(ui.diff_vs_previous);
  EXPECT_EQ(ui.diff_scroll, 0);
  handle_key('d', ui, s);
  EXPECT_FALSE(ui.diff_vs_previous);
}

TEST(TuiKeys, SlashEditsTheFilterWhichTakesEveryKey) {
  const Snapshot s = testing::session_snapshot();
  UiState ui;
  handle_key('/', ui, s);
  EXPECT_TRUE(ui.filtering);
  for (int c : {'q', 'x'}) EXPECT_EQ(handle_key(c, ui, s), Command::None);
  EXPECT_EQ(ui.filter, "qx");
  handle_key(k(Key::Backspace), ui, s);
  handle_key(k(Key::Backspace), ui, s);
  for (int c : std::string("correct 2.")) handle_key(c, ui, s);
  handle_key(0xE9, ui, s);  // é, as a code point
  EXPECT_EQ(ui.filter, "correct 2.\xc3\xa9");
  handle_key(k(Key::Backspace), ui, s);
  handle_key(k(Key::Enter), ui, s);
  EXPECT_FALSE(ui.filtering);
  EXPECT_EQ(ui.filter, "correct 2.");
  handle_key(k(Key::Escape), ui, s);  // Esc outside the prompt clears the filter
  EXPECT_EQ(ui.filter, "");
  handle_key('/', ui, s);
  handle_key('z', ui, s);
  handle_key(k(Key::Escape), ui, s);
  EXPECT_FALSE(ui.filtering);
  EXPECT_EQ(ui.filter, "");
}

TEST(TuiKeys, FilterMatchesNumbersVerdictsFlagsAndWords) {
  const Snapshot s = testing::session_snapshot();
  auto numbers = [&](const std::string& f) {
    std::vector<int> out;
    for (const auto* a : filtered(s, f)) out.push_back(a->number);
    return out;
  };
  EXPECT_EQ(numbers("correct"), (std::vector<int>{1, 2, 4, 6, 8, 11, 12}));
  EXPECT_EQ(numbers("no_custom"), (std::vector<int>{7}));
  EXPECT_EQ(numbers("#12"), (std::vector<int>{12}));
  EXPECT_EQ(numbers("PERSISTENT grid"), (std::vector<int>{12, 13}));
  EXPECT_EQ(numbers("err"), (std::vector<int>{3, 13}));
  EXPECT_TRUE(numbers("nothing like it").empty());
  // A selection the filter hides falls back to following the newest listed.
  UiState ui;
  ui.selected = 7;
  handle_key('/', ui, s);
  for (int c : std::string("correct")) handle_key(c, ui, s);
  EXPECT_EQ(ui.selected, -1);
  EXPECT_EQ(selected_attempt(s, ui)->number, 12);
}

TEST(TuiKeys, HelpOpensWithQuestionMarkAndAnyCloseKey) {
  const Snapshot s = testing::session_snapshot();
  UiState ui;
  handle_key('?', ui, s);
  EXPECT_TRUE(ui.help);
  handle_key(k(Key::Escape), ui, s);
  EXPECT_FALSE(ui.help);
  handle_key('?', ui, s);
  EXPECT_EQ(handle_key('q', ui, s), Command::Quit);  // q quits from the help as well
}

}  // namespace
}  // namespace ok::tui
