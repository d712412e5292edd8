#include "optimize/trajectory.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <tuple>

#include "util/strings.hpp"

namespace ok::optimize {

using nlohmann::json;

namespace {

json or_null(const std::string& s) {
  return s.empty() ? json(nullptr) : json(s);
}

// At most `n` bytes of `s`, cut on a UTF-8 boundary, with "..." when cut.
std::string cap(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  size_t end = n > 3 ? n - 3 : 0;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end) + "...";
}

// The head and the tail of `s` within n characters: failure classes often share their head (the
// verdict, "RuntimeError: CUDA error:") and differ at the end, so a tight cut keeps both ends.
std::string cap_middle(const std::string& s, size_t n) {
  if (s.size() <= n || n < 8) return cap(s, n);
  size_t head = n * 2 / 5, tail = s.size() - (n - head - 3);
  while (head > 0 && (static_cast<unsigned char>(s[head]) & 0xC0) == 0x80) --head;
  while (tail < s.size() && (static_cast<unsigned char>(s[tail]) & 0xC0) == 0x80) ++tail;
  return s.substr(0, head) + "..." + s.substr(tail);
}

std::string speed(const std::optional<double>& x) {
  return x ? fmt::format("{:.3f}", *x) : std::string();
}

std::string runtime(const std::optional<double>& x) {
  return x ? fmt::format("{:.1f}", *x) : std::string();
}

// "3, 5, 9"; past `show` numbers the first show-1, "...", and the last.
std::string numbers(const std::vector<int>& n, size_t show) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < n.size(); ++i) {
    if (n.size() > show && i + 1 == show) {
      parts.push_back("...");
      parts.push_back(std::to_string(n.back()));
      break;
    }
    parts.push_back(std::to_string(n[i]));
  }
  return util::join(parts, ", ");
}

std::string intent_title(const Attempt& a) {
  if (!a.params.is_object() || !a.params.contains("intent")) return "";
  const json& i = a.params["intent"];
  return i.is_object() && i.contains("title") && i["title"].is_string()
             ? i["title"].get<std::string>()
             : "";
}

std::string idea_of(const Attempt& a) {
  std::string t = util::trim(intent_title(a));
  if (t.empty()) t = util::trim(a.description);
  return t.empty() ? "(no description)" : t;
}

// Case, spacing and a final full stop do not make ideas distinct.
std::string idea_key(const std::string& idea) {
  std::string k;
  for (char c : idea) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!k.empty() && k.back() != ' ') k += ' ';
    } else {
      k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  while (!k.empty() && (k.back() == ' ' || k.back() == '.')) k.pop_back();
  return k;
}

std::string normalise(std::string s) {
  static const std::regex path(R"((?:[\w.-]*/)+[\w.-]+)");
  static const std::regex hex(R"(0x[0-9a-fA-F]+)");
  static const std::regex num(R"(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)");
  static const std::regex space(R"(\s+)");
  s = std::regex_replace(s, path, "<path>");
  s = std::regex_replace(s, hex, "N");
  s = std::regex_replace(s, num, "N");
  return util::trim(std::regex_replace(s, space, " "));
}

// The line of an error that names its class: a traceback's last exception line, else the first
// line that says error, else the first line.
std::string error_head(const std::string& error) {
  static const std::regex exception(R"(^\s*(?:\w+\.)*[A-Z]\w*(?:Error|Exception|Interrupt)\b)");
  auto lines = util::split(error, '\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (std::regex_search(*it, exception)) return *it;
  for (const auto& l : lines) {
    std::string lower = l;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (lower.find("error") != std::string::npos) return l;
  }
  for (const auto& l : lines)
    if (!util::trim(l).empty()) return l;
  return "";
}

std::vector<std::string> flag_names(const Attempt& a) {
  std::vector<std::string> out;
  if (!a.summary.is_object() || !a.summary.contains("flags") || !a.summary["flags"].is_array())
    return out;
  for (const auto& f : a.summary["flags"]) {
    if (f.is_string()) out.push_back(f.get<std::string>());
    if (f.is_object() && f.contains("name") && f["name"].is_string())
      out.push_back(f["name"].get<std::string>());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string one_line(const Attempt& a) {
  std::string s = fmt::format("attempt {}: {}", a.number, a.verdict);
  if (a.speedup) s += fmt::format(", {}x", speed(a.speedup));
  if (a.runtime_us) s += fmt::format(", {} us", runtime(a.runtime_us));
  s += ". " + cap(idea_of(a), 100);
  if (is_failure(a)) s += " [" + cap(failure_class(a), 60) + "]";
  return s;
}

json full_entry(const Attempt& a, bool last, const std::map<int, std::string>& sources,
                const Attempt* best, const PromptBudgets& b) {
  json e = {{"number", a.number},
            {"verdict", a.verdict},
            {"speedup", or_null(speed(a.speedup))},
            {"runtime_us", or_null(runtime(a.runtime_us))},
            {"description", or_null(cap(a.description, 300))},
            {"error", trim_middle(a.error, b.error_chars)},
            {"has_error", !a.error.empty()},
            {"bottleneck", nullptr},
            {"next", nullptr},
            {"code", nullptr},
            {"code_is_best", best && best->number == a.number}};
  const std::string title = intent_title(a);
  e["idea"] = title.empty() || idea_key(title) == idea_key(a.description) ? json(nullptr)
                                                                          : json(cap(title, 200));
  // The last attempt's diagnosis is a section of its own.
  if (!last && a.diagnosis.is_object()) {
    e["bottleneck"] = or_null(a.diagnosis.value("bottleneck", ""));
    const json s = a.diagnosis.value("suggestions", json::array());
    if (s.is_array() && !s.empty() && s[0].is_object())
      e["next"] = or_null(cap(s[0].value("action", ""), 200));
  }
  auto src = sources.find(a.number);
  if (!e["code_is_best"].get<bool>() && src != sources.end() && !src->second.empty())
    e["code"] = trim_middle(src->second, b.code_chars);
  return e;
}

size_t recent_start(const std::vector<Attempt>& history, const PromptBudgets& b) {
  return history.size() > b.recent_attempts ? history.size() - b.recent_attempts : 0;
}

PromptSection recent_section(const std::vector<Attempt>& history,
                             const std::map<int, std::string>& sources, const Attempt* best,
                             const PromptBudgets& b) {
  PromptSection s{"recent", {}, PromptBudgets::chars(b.recent), kRecentPriority};
  if (history.empty()) return s;
  json full = json::array(), brief = json::array();
  for (size_t i = recent_start(history, b); i < history.size(); ++i) {
    full.push_back(full_entry(history[i], i + 1 == history.size(), sources, best, b));
    brief.push_back({{"line", one_line(history[i])}});
  }
  // Demote the oldest full attempts to one line, one more in each rendering.
  for (size_t demoted = 0; demoted <= full.size(); ++demoted) {
    json v = {
        {"has_attempts", true}, {"attempts_brief", json::array()}, {"attempts", json::array()}};
    for (size_t i = 0; i < full.size(); ++i)
      (i < demoted ? v["attempts_brief"] : v["attempts"])
          .push_back(i < demoted ? brief[i] : full[i]);
    s.variants.push_back(std::move(v));
  }
  return s;
}

PromptSection best_section(const Attempt* best, const std::map<int, std::string>& sources,
                           const PromptBudgets& b, const Measure& measure) {
  PromptSection s{"best", {}, PromptBudgets::chars(b.best), kBestPriority};
  if (!best) return s;
  json id = {{"number", best->number},
             {"speedup", speed(best->speedup)},
             {"runtime_us", or_null(runtime(best->runtime_us))},
             {"description", or_null(cap(best->description, 200))},
             {"source", nullptr}};
  auto src = sources.find(best->number);
  const std::string code = src == sources.end() ? "" : src->second;
  if (!code.empty()) {
    json full = id;
    full["source"] = code;
    s.variants.push_back({{"best", full}});
    // The code cut to what the budget leaves after the identity and the fence, then shorter.
    json fence = id;
    fence["source"] = " ";
    const size_t overhead = measure({{"best", fence}}) + 48;  // 48: trim_middle's marker line
    const size_t room = s.budget_chars > overhead ? s.budget_chars - overhead : 0;
    size_t last = code.size();
    for (size_t limit : {room, code.size() / 2, code.size() / 4}) {
      if (limit < 400 || limit >= last || limit > room) continue;
      json cut = id;
      cut["source"] = trim_middle(code, limit);
      s.variants.push_back({{"best", cut}});
      last = limit;
    }
  }
  s.variants.push_back({{"best", id}});
  return s;
}

PromptSection diagnosis_section(const std::vector<Attempt>& history, const PromptBudgets& b) {
  PromptSection s{"diagnosis", {}, PromptBudgets::chars(b.diagnosis), kDiagnosisPriority};
  if (history.empty() || !history.back().diagnosis.is_object()) return s;
  const json& d = history.back().diagnosis;
  const json ev = d.value("evidence", json::array());
  const json sg = d.value("suggestions", json::array());
  // (evidence lines, suggestions, characters per line) from the fullest to the most compact.
  const std::vector<std::tuple<size_t, size_t, size_t>> shapes = {
      {8, 6, 300}, {0, 3, 200}, {0, 1, 120}};
  for (const auto& [n_ev, n_sg, width] : shapes) {
    json evidence = json::array(), suggestions = json::array();
    for (size_t i = 0; ev.is_array() && i < ev.size() && i < n_ev; ++i)
      if (ev[i].is_string()) evidence.push_back(cap(ev[i].get<std::string>(), width));
    for (size_t i = 0; sg.is_array() && i < sg.size() && i < n_sg; ++i)
      if (sg[i].is_object())
        suggestions.push_back(
            {{"action", cap(sg[i].value("action", ""), width)},
             {"expected_gain", fmt::format("{:.2f}", sg[i].value("expected_gain", 0.0))}});
    s.variants.push_back({{"diagnosis",
                           {{"bottleneck", d.value("bottleneck", "")},
                            {"evidence", evidence},
                            {"suggestions", suggestions}}}});
  }
  return s;
}

struct Group {
  std::string label;
  std::vector<int> attempts;
  std::map<std::string, int> verdicts;
  const Attempt* best = nullptr;
};

// Attempts grouped by `key`, in the order each group first appears.
template <typename Key>
std::vector<Group> group(const std::vector<Attempt>& attempts, size_t end, Key key) {
  std::vector<Group> out;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < end; ++i) {
    const Attempt& a = attempts[i];
    auto [k, label] = key(a);
    if (k.empty()) continue;
    auto [it, added] = index.emplace(k, out.size());
    if (added) out.push_back(Group{label, {}, {}, nullptr});
    Group& g = out[it->second];
    g.attempts.push_back(a.number);
    ++g.verdicts[a.verdict];
    if (a.correct && a.speedup && (!g.best || *a.speedup > *g.best->speedup)) g.best = &a;
  }
  return out;
}

PromptSection ideas_section(const std::vector<Attempt>& history, const PromptBudgets& b) {
  PromptSection s{"ideas", {}, PromptBudgets::chars(b.ideas), kIdeasPriority};
  auto groups = group(history, recent_start(history, b), [](const Attempt& a) {
    std::string idea = idea_of(a);
    return std::pair{idea_key(idea), idea};
  });
  if (groups.empty()) return s;
  auto line = [](const Group& g, bool full) {
    std::string l =
        fmt::format("{}: attempt{} {}", cap(g.label, full ? 200 : 60),
                    g.attempts.size() > 1 ? "s" : "", numbers(g.attempts, full ? 8 : 3));
    if (full) {
      std::vector<std::string> counts;
      for (const auto& [v, n] : g.verdicts) counts.push_back(fmt::format("{} {}", n, v));
      l += " (" + util::join(counts, ", ") + ")";
    }
    if (g.best)
      l += fmt::format("; best {}x{}", speed(g.best->speedup),
                       full ? fmt::format(" (attempt {})", g.best->number) : "");
    return json{{"line", l}};
  };
  // Full lines, compact lines, then compact lines without the oldest ideas, one more each time.
  for (size_t dropped = 0; dropped < groups.size(); ++dropped) {
    for (bool full : {true, false}) {
      if (full && dropped > 0) continue;
      json lines = json::array();
      for (size_t i = dropped; i < groups.size(); ++i) lines.push_back(line(groups[i], full));
      s.variants.push_back(
          {{"has_attempts", true},
           {"has_ideas", true},
           {"ideas", lines},
           {"ideas_more",
            dropped ? json(fmt::format("({} older ideas not shown)", dropped)) : json(nullptr)}});
    }
  }
  return s;
}

PromptSection failures_section(const std::vector<Attempt>& history, const PromptBudgets& b) {
  PromptSection s{"failures", {}, PromptBudgets::chars(b.failures), kFailuresPriority};
  auto groups = group(history, history.size(), [](const Attempt& a) {
    if (!is_failure(a)) return std::pair{std::string(), std::string()};
    std::string label = a.verdict + ": " + failure_class(a);
    return std::pair{label, label};
  });
  if (groups.empty()) return s;
  // Full, compact, and lines short enough for every class to be named within the budget.
  const size_t fit = s.budget_chars / groups.size();
  const std::vector<std::pair<size_t, size_t>> shapes = {
      {120, 8}, {60, 3}, {std::max<size_t>(fit > 24 ? fit - 24 : 0, 16), 0}};
  // The head every class shares ("runtime_error: RuntimeError: CUDA error: "), up to a word's end:
  // the tightest shape says it once, on the first line, so the lines' room goes to what differs.
  std::string shared = groups.size() > 1 ? groups[0].label : "";
  for (const auto& g : groups) {
    size_t n = 0;
    while (n < shared.size() && n < g.label.size() && shared[n] == g.label[n]) ++n;
    shared.resize(n);
  }
  shared.resize(shared.find_last_of(" :") == std::string::npos ? 0 : shared.find_last_of(" :") + 1);
  if (shared.size() < 8) shared.clear();
  for (const auto& [width, show] : shapes) {
    json lines = json::array();
    for (const auto& g : groups) {
      // The tightest shape cuts the middle, so classes that share a head stay distinct.
      std::string label =
          show ? cap(g.label, width)
               : (&g == &groups.front() || shared.empty() ? shared : std::string("...")) +
                     cap_middle(g.label.substr(shared.size()), width);
      std::string l = fmt::format("{} x{}", label, g.attempts.size());
      if (show)
        l += " (attempt" + std::string(g.attempts.size() > 1 ? "s " : " ") +
             numbers(g.attempts, show) + ")";
      lines.push_back({{"line", l}});
    }
    s.variants.push_back(
        {{"has_attempts", true}, {"has_failures", true}, {"failure_classes", lines}});
  }
  return s;
}

}  // namespace

bool is_failure(const Attempt& a) {
  return !a.correct && !a.verdict.empty() && a.verdict != "not_evaluated";
}

std::string failure_class(const Attempt& a) {
  auto flags = flag_names(a);
  if (a.verdict == "rejected" && !flags.empty())
    return cap("flags: " + util::join(flags, ", "), 80);
  std::string head = normalise(error_head(a.error));
  return head.empty() ? "(no message)" : cap(head, 80);
}

const Attempt* best_attempt(const std::vector<Attempt>& history) {
  const Attempt* best = nullptr;
  for (const auto& a : history)
    if (a.correct && a.speedup && (!best || *a.speedup > *best->speedup)) best = &a;
  return best;
}

std::string skills_query(const std::vector<Attempt>& history, const std::string& direction) {
  std::string q = direction;
  auto add = [&q](const nlohmann::json& v) {
    if (v.is_string() && !v.get<std::string>().empty()) q += " " + v.get<std::string>();
    if (v.is_array())
      for (const auto& x : v)
        if (x.is_string()) q += " " + x.get<std::string>();
  };
  if (!history.empty()) {
    const Attempt& last = history.back();
    if (last.diagnosis.is_object())
      for (const char* key : {"bottleneck", "evidence", "suggestions"})
        add(last.diagnosis.value(key, nlohmann::json()));
    if (!last.correct) q += " " + last.error.substr(0, 300);
  }
  if (const Attempt* best = best_attempt(history)) {
    q += " " + best->description;
    if (best->params.is_object() && best->params.contains("intent") &&
        best->params["intent"].is_object())
      add(best->params["intent"].value("title", nlohmann::json()));
  }
  return util::trim(q);
}

std::vector<int> attempts_needing_code(const std::vector<Attempt>& history,
                                       const PromptBudgets& b) {
  std::vector<int> out;
  for (size_t i = recent_start(history, b); i < history.size(); ++i)
    out.push_back(history[i].number);
  if (const Attempt* best = best_attempt(history)) out.push_back(best->number);
  return out;
}

std::vector<PromptSection> trajectory_sections(const std::vector<Attempt>& history,
                                               const std::map<int, std::string>& sources,
                                               const PromptBudgets& b, const Measure& measure) {
  const Attempt* best = best_attempt(history);
  return {failures_section(history, b), ideas_section(history, b),
          recent_section(history, sources, best, b), best_section(best, sources, b, measure),
          diagnosis_section(history, b)};
}

// The skills' default budget is the one the skill library documents for its section.
static_assert(PromptBudgets{}.skills * kCharsPerToken == skills::kPromptBudgetChars);

PromptSection skills_section(const std::vector<skills::RankedSkill>& ranked, const PromptBudgets& b,
                             const Measure& measure) {
  PromptSection s{"skills", {}, PromptBudgets::chars(b.skills), kSkillsPriority};
  if (ranked.empty()) return s;
  const size_t heading = measure({{"skill_library", " "}});
  const size_t room = s.budget_chars > heading ? s.budget_chars - heading : 0;
  std::string last;
  for (size_t share : {1, 2, 4, 8}) {
    std::string text = skills::prompt_section(ranked, room / share);
    if (text.empty() || text == last) continue;
    s.variants.push_back({{"skill_library", text}});
    last = std::move(text);
  }
  return s;
}

FittedPrompt fit_trajectory(const std::vector<Attempt>& history,
                            const std::map<int, std::string>& sources, const PromptBudgets& budgets,
                            const Measure& measure, std::vector<PromptSection> extra) {
  std::vector<PromptSection> sections = trajectory_sections(history, sources, budgets, measure);
  for (auto& s : extra) sections.push_back(std::move(s));
  FittedPrompt f = fit_sections(sections, PromptBudgets::chars(budgets.total), measure);
  bool best_code_shown = false;
  for (const auto& s : f.sections)
    if (s.name == "best" && s.context.contains("best"))
      best_code_shown = s.context["best"].value("source", json(nullptr)).is_string();
  if (best_code_shown) return f;
  // The budget left the best kernel's code out: no recent attempt may point at it.
  for (auto& s : f.sections) {
    if (s.name != "recent" || !s.context.contains("attempts")) continue;
    for (auto& e : s.context["attempts"]) e["code_is_best"] = false;
    const size_t chars = measure(s.context);
    f.chars = f.chars - s.chars + chars;
    s.chars = chars;
    s.over_budget = s.chars > s.budget_chars;
  }
  return f;
}

}  // namespace ok::optimize
