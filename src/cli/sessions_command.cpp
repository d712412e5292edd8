#include "cli/sessions_command.hpp"

#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/context.hpp"

namespace ok::cli {

namespace {

using nlohmann::json;
using util::ErrorKind;

struct SessionsOptions {
  bool json = false;
  int limit = 0;
};

// "2026-01-31T12:34:56.789Z" as "2026-01-31 12:34:56".
std::string short_time(const std::string& iso) {
  std::string t = iso.substr(0, 19);
  if (t.size() > 10 && t[10] == 'T') t[10] = ' ';
  return t;
}

std::string clipped(const std::string& s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

json to_json(const store::SessionSummary& s) {
  return {{"id", s.id},
          {"problem", s.problem},
          {"backend", s.backend},
          {"model", s.model},
          {"mode", s.mode},
          {"status", s.status},
          {"started_at", s.started_at},
          {"updated_at", s.updated_at},
          {"attempts", s.attempts},
          {"best_speedup", s.best_speedup ? json(*s.best_speedup) : json(nullptr)},
          {"cost_usd", s.cost_usd},
          {"out_dir", s.out_dir}};
}

void print_table(const std::vector<store::SessionSummary>& sessions) {
  fmt::print("{:<28} {:<24} {:<7} {:<20} {:<11} {:>8} {:>8} {:>8}  {:<19}  {}\n", "session",
             "problem", "backend", "model", "status", "attempts", "best", "cost $", "started",
             "updated");
  for (const auto& s : sessions)
    fmt::print("{:<28} {:<24} {:<7} {:<20} {:<11} {:>8} {:>8} {:>8.4f}  {:<19}  {}\n",
               clipped(s.id, 28), clipped(s.problem, 24), s.backend, clipped(s.model, 20), s.status,
               s.attempts,
               s.best_speedup ? fmt::format("{:.3f}x", *s.best_speedup) : std::string("-"),
               s.cost_usd, short_time(s.started_at), short_time(s.updated_at));
}

int run_sessions(const GlobalOptions& g, const SessionsOptions& o) {
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  const auto path = store_path(g, *cfg);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return report_error({ErrorKind::kBadInput, fmt::format("no store at {}", path.string())});
  auto st = store::Store::open(path);
  if (!st)
    return report_error({ErrorKind::kBadInput, fmt::format("cannot read the store at {}: {}",
                                                           path.string(), st.error().message)});
  auto sessions = st->sessions(o.limit);
  if (!sessions) return report_error(sessions.error());
  if (o.json) {
    json list = json::array();
    for (const auto& s : *sessions) list.push_back(to_json(s));
    fmt::print("{}\n", json{{"db", path.string()}, {"sessions", list}}.dump(2));
    return 0;
  }
  if (sessions->empty()) {
    fmt::print("no sessions in {}\n", path.string());
    return 0;
  }
  print_table(*sessions);
  return 0;
}

}  // namespace

void add_sessions_command(CLI::App& app, GlobalOptions& g, Action& action) {
  auto o = std::make_shared<SessionsOptions>();
  auto* cmd = app.add_subcommand("sessions", "The store's optimisation sessions, newest first");
  cmd->add_option("--db", g.db, "Store database");
  cmd->add_flag("--json", o->json, "Print one JSON object: {db, sessions}");
  cmd->add_option("--limit", o->limit, "At most this many sessions (default: all)")
      ->check(CLI::PositiveNumber);
  cmd->callback([&g, &action, o] { action = [&g, o] { return run_sessions(g, *o); }; });
}

}  // namespace ok::cli
