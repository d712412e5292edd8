// `openkernel intents SESSION` and `openkernel strategies`: the search's state as the store
// keeps it (docs/search.md). `intents` prints a session's intent tree (status, priority,
// attempts, evidence) or, with --json, the stored JSON unchanged, for the terminal UI and the
// dashboard. `strategies` prints the strategy population with each member's objectives and marks
// the Pareto frontier. Exit codes: 0, 1 internal error, 2 no such session or unreadable state.
#include <fmt/core.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/context.hpp"
#include "search/strategy.hpp"

namespace ok::cli {

namespace {

using nlohmann::json;
using util::ErrorKind;

struct SearchOptions {
  std::string session;
  std::string problem_class;
  bool json = false;
};

std::string mark(const std::string& status) {
  if (status == "succeeded") return "+";
  if (status == "failed") return "x";
  if (status == "pruned") return "-";
  if (status == "trying") return "~";
  return "?";
}

void print_tree(const json& intents, int id, int depth) {
  for (const auto& i : intents) {
    if (i.value("id", -1) != id) continue;
    std::string ev;
    for (const auto& e : i.value("evidence", json::array()))
      ev += (ev.empty() ? "" : ",") + std::to_string(e.get<int>());
    // A seeded intent (source skill) names its skill.
    const json action = i.value("action", json::object());
    const std::string skill = action.is_object() ? action.value("skill", std::string()) : "";
    fmt::print("{:>{}}{} [{}] {}  (p {:.3f}, c {:.2f}{}{}{})\n", "", depth * 2,
               mark(i.value("status", "")), i.value("id", 0), i.value("title", ""),
               i.value("priority", 0.0), i.value("confidence", 0.0),
               skill.empty() ? "" : ", skill " + skill, ev.empty() ? "" : ", attempts " + ev,
               i.value("note", "").empty() ? "" : ": " + i.value("note", ""));
  }
  for (const auto& i : intents)
    if (i["parent"].is_number() && i["parent"].get<int>() == id)
      print_tree(intents, i.value("id", 0), depth + 1);
}

// The skills the session was fed (docs/skills.md) and whether each helped.
void print_skills(const json& skills) {
  if (!skills.is_object()) return;
  const json used = skills.value("used", json::array());
  fmt::print("skills fed: {}\n", used.empty() ? "none applied" : std::to_string(used.size()));
  for (const auto& u : used)
    fmt::print("  {} {} ({}): {}\n", u.value("id", ""), u.value("outcome", ""),
               u.value("provenance", ""), u.value("title", ""));
  const json learned = skills.value("learned", json());
  if (learned.is_object())
    fmt::print("skill {}: {} {}\n", learned.value("new", false) ? "learnt" : "confirmed",
               learned.value("id", ""), learned.value("title", ""));
}

int run_intents(const GlobalOptions& g, const SearchOptions& o) {
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  auto st = open_store(g, *cfg);
  if (!st) return report_error(st.error());
  auto text = st->search_state(o.session, "intents");
  if (!text) return report_error(text.error());
  if (!*text) {
    auto row = st->find_session(o.session);
    if (!row) return report_error(row.error());
    return report_error({ErrorKind::kBadInput,
                         *row
                             ? fmt::format("session {} has no intent tree (it ran before the "
                                           "search engine, or has not evaluated anything yet)",
                                           o.session)
                             : fmt::format("no session {} in {}", o.session, st->path().string())});
  }
  json j = json::parse(**text, nullptr, false);
  if (!j.is_object() || !j.contains("intents"))
    return report_error(
        {ErrorKind::kBadInput, "the intent tree of session " + o.session + " is unreadable"});
  if (o.json) {
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("session {}: {} search, strategy {}, {} problems\n", o.session, j.value("policy", ""),
             j.contains("strategy") ? j["strategy"].value("id", "") : "",
             j.value("problem_class", ""));
  fmt::print("{} evaluations, best {}, device busy {:.0f}% of {:.1f} s, {} in flight\n",
             j.value("evaluations", 0),
             j["best_speedup"].is_number() ? fmt::format("{:.3f}x", j["best_speedup"].get<double>())
                                           : std::string("none"),
             100 * j.value("device_busy_fraction", 0.0), j.value("wall_s", 0.0),
             j.value("in_flight", 1));
  fmt::print("status: + succeeded  x failed  - pruned  ~ trying  ? open\n");
  print_tree(j["intents"], 0, 0);
  print_skills(j.value("skills", json()));
  return 0;
}

int run_strategies(const GlobalOptions& g, const SearchOptions& o) {
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  auto st = open_store(g, *cfg);
  if (!st) return report_error(st.error());
  auto text = st->search_state("global", "strategies");
  if (!text) return report_error(text.error());
  auto pop = *text ? search::Population::from_json(json::parse(**text, nullptr, false))
                   : util::Result<search::Population>(search::Population::seeded());
  if (!pop)
    return report_error({ErrorKind::kBadInput,
                         "the stored strategy population is unreadable: " + pop.error().message});
  if (o.json) {
    json j = pop->to_json();
    json frontier = json::array();
    for (const auto* s : pop->frontier(o.problem_class)) frontier.push_back(s->id);
    j["frontier"] = frontier;
    j["problem_class"] = o.problem_class;
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  auto frontier = pop->frontier(o.problem_class);
  fmt::print("{} strategies{}; * = Pareto frontier over (geomean speedup, correct rate, cost)\n",
             pop->strategies().size(),
             o.problem_class.empty() ? "" : " on " + o.problem_class + " problems");
  fmt::print("  {:<28} {:>8} {:>8} {:>9} {:>8}  {}\n", "strategy", "problems", "geomean", "correct",
             "cost $", "last change");
  for (const auto& s : pop->strategies()) {
    auto ob = pop->objectives(s.id, o.problem_class);
    bool front = std::find(frontier.begin(), frontier.end(), &s) != frontier.end();
    fmt::print("{} {:<28} {:>8} {:>8.3f} {:>8.0f}% {:>8.4f}  {}\n", front ? '*' : ' ', s.id,
               ob.problems, ob.geomean_speedup, 100 * ob.correctness_rate, ob.cost_usd,
               s.mutation.empty() ? "(seed)" : s.mutation);
  }
  return 0;
}

}  // namespace

void add_search_commands(CLI::App& app, GlobalOptions& g, Action& action) {
  auto o = std::make_shared<SearchOptions>();
  auto* intents =
      app.add_subcommand("intents", "A session's intent tree (the search's world model)");
  intents->add_option("session", o->session, "Session id")->required();
  intents->add_flag("--json", o->json, "Print the stored JSON (docs/search.md)");
  intents->add_option("--db", g.db, "Store database");
  intents->callback([&g, &action, o] { action = [&g, o] { return run_intents(g, *o); }; });
  auto* strategies =
      app.add_subcommand("strategies", "The search strategy population and its Pareto frontier");
  strategies->add_option("--class", o->problem_class,
                         "Objectives on one problem class (e.g. pointwise); default all");
  strategies->add_flag("--json", o->json, "Print JSON");
  strategies->add_option("--db", g.db, "Store database");
  strategies->callback([&g, &action, o] { action = [&g, o] { return run_strategies(g, *o); }; });
}

}  // namespace ok::cli
