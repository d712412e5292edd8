// The agents: the search's set-up, the attempts in flight, the search's latest decisions and, for
// the selected attempt (else the newest generation), the generator's text as it streams, the
// critic's diagnosis and suggestions. The newest line at the bottom, scrolled back with Up/PgUp.
#include <fmt/core.h>

#include <algorithm>

#include "tui/draw.hpp"
#include "tui/panels.hpp"

namespace ok::tui::panels {

namespace {

// The selected attempt's messages; when following, the newest generation that streams text,
// else the newest issued.
const AgentMessage* target(const Snapshot& s, const UiState& ui) {
  if (ui.selected >= 0)
    for (const auto& m : s.agents)
      if (m.number == ui.selected) return &m;
  for (auto it = s.agents.rbegin(); it != s.agents.rend(); ++it)
    if (it->state == "generating" && !it->text.empty()) return &*it;
  return s.agents.empty() ? nullptr : &s.agents.back();
}

Style state_style(const std::string& state) {
  return state == "generating" ? draw::kWarn : state == "evaluating" ? draw::kInfo : draw::kGood;
}

void add_wrapped(std::vector<draw::Line>& out, std::string_view text, int width,
                 std::string_view first, std::string_view rest, Style prefix, Style st) {
  const int pw = text_width(first);
  bool head = true;
  for (auto& l : draw::wrap(text, width - pw)) {
    out.push_back({{std::string(head ? first : rest), prefix}, {std::move(l), st}});
    head = false;
  }
}

// The scrolling part, oldest first: the search's latest decisions, then the target's text and
// the critic's diagnosis.
std::vector<draw::Line> conversation(const Snapshot& s, const AgentMessage* m, int w) {
  std::vector<draw::Line> out;
  const size_t n = std::min<size_t>(s.decisions.size(), 3);
  for (size_t i = s.decisions.size() - n; i < s.decisions.size(); ++i) {
    const Decision& d = s.decisions[i];
    add_wrapped(out, d.kind + ": " + d.text, w, "search ▸ ", "         ", draw::kInfo, draw::kDim);
  }
  if (m) {
    std::string_view text = m->text;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    if (!text.empty()) {
      add_wrapped(out, text, w, "│ ", "│ ", draw::kDim, draw::kPlain);
    } else if (m->state == "generating") {
      out.push_back({{"│ ", draw::kDim}, {"waiting for the generator…", draw::kDim}});
    }
    if (!m->diagnosis.empty())
      add_wrapped(out, m->diagnosis, w, "critic ▸ ", "         ", draw::kCompile, draw::kPlain);
    for (const auto& sug : m->suggestions)
      add_wrapped(out, sug, w, "  → ", "    ", draw::kAccent, draw::kDim);
  }
  return out;
}

}  // namespace

void agent(const Snapshot& s, UiState& ui, Canvas& c, Rect r) {
  const Rect in = frame(c, r, Panel::Agent, "Agent · generator and critic", ui);
  if (in.empty()) return;
  int y = in.y;
  if (in.h >= 6 && !s.strategy.empty()) c.put(in.x, y++, s.strategy, draw::kDim, in.w);
  const AgentMessage* m = target(s, ui);
  if (m) {  // the attempt shown, then the others in flight
    const AttemptView* a = m->state == "done" ? s.attempt(m->number) : nullptr;
    draw::Line h = {{"▶ ", state_style(m->state)}, {fmt::format("#{} ", m->number), draw::kBold}};
    if (a) {  // recorded: its verdict
      h.push_back({a->verdict, draw::verdict_style(a->verdict)});
      if (a->correct) h.push_back({" " + draw::speedup(a->speedup), draw::kBold});
    } else {
      h.push_back({m->state, state_style(m->state)});
    }
    h.push_back({" · " + m->title, draw::kPlain});
    if (m->retries > 0)
      h.push_back({fmt::format("  retry {}: {}", m->retries, m->retry_reason), draw::kWarn});
    for (const auto& f : s.agents)
      if (f.state != "done" && &f != m) {
        h.push_back({"  ● ", state_style(f.state)});
        h.push_back({fmt::format("#{} {}", f.number, f.state), draw::kDim});
      }
    draw::put_line(c, in.x, y++, h, in.w);
  }
  const int h = in.y + in.h - y;
  const auto lines = conversation(s, m, in.w);
  if (lines.empty()) {
    c.put(in.x, y, m ? "" : "waiting for the session to start", draw::kDim, in.w);
    return;
  }
  const int n = static_cast<int>(lines.size());
  ui.agent_scroll = std::clamp(ui.agent_scroll, 0, std::max(0, n - h));
  const int first = std::max(0, n - h - ui.agent_scroll);
  for (int k = 0; k < h && first + k < n; ++k)
    draw::put_line(c, in.x, y + k, lines[static_cast<size_t>(first + k)], in.w);
}

}  // namespace ok::tui::panels
