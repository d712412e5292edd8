#include "cli/dashboard_command.hpp"

#include <fmt/core.h>

#include <chrono>
#include <thread>

#include "charts/data.hpp"
#include "charts/inputs.hpp"
#include "cli/context.hpp"
#include "dashboard/api.hpp"
#include "dashboard/queries.hpp"
#include "dashboard/server.hpp"
#include "dashboard/site.hpp"
#include "util/cancel.hpp"
#include "util/paths.hpp"

namespace ok::cli {

namespace {

using util::ErrorKind;

struct DashboardOptions {
  std::string session;
  std::string host = "127.0.0.1";
  int port = 8050;
  std::vector<std::string> results;  // --results: TSVs for the Charts page
  GlobalOptions g;
};

// The Charts page's data: chart_data (src/charts, as `openkernel charts` computes it) of the
// --results TSVs with the dashboard's store (its sessions form a run of their own).
dashboard::ChartsSource charts_source(const std::vector<std::string>& results,
                                      const std::filesystem::path& store) {
  charts::Sources sources;
  sources.tsvs.assign(results.begin(), results.end());
  sources.dbs = {store};
  sources.baselines = util::resource_root() / "data/baselines/published.json";
  return [sources]() -> util::Result<nlohmann::json> {
    auto in = charts::load_inputs(sources);
    if (!in) return std::unexpected(in.error());
    return charts::chart_data(*in);
  };
}

std::string percent_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

int run_dashboard(const DashboardOptions& o) {
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  auto path = store_path(o.g, *cfg);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return report_error(
        {ErrorKind::kBadInput, fmt::format("no store at {} (--db names one; `openkernel optimize` "
                                           "creates it)",
                                           path.string())});
  auto st = store::Store::open(path);
  if (!st) return report_error(st.error());
  // Read-only by the connection, not only by the routes: SQLite refuses any write on it.
  if (auto r = st->db().exec("PRAGMA query_only = ON"); !r) return report_error(r.error());
  if (!o.session.empty()) {
    auto exists = dashboard::Queries(*st).has_session(o.session);
    if (!exists) return report_error(exists.error());
    if (!*exists)
      return report_error(
          {ErrorKind::kBadInput, fmt::format("no session {} in {}", o.session, path.string())});
  }
  auto root = util::resource_root();
  auto site = dashboard::Site::load(root / "web", root / "node_modules");
  if (!site) return report_error(site.error());
  for (const auto& r : o.results)
    if (!std::filesystem::is_regular_file(r, ec))
      return report_error({ErrorKind::kBadInput, "no results TSV at " + r});
  dashboard::Api api(*st, *site, charts_source(o.results, path));
  auto server = dashboard::Server::bind(api, o.host, o.port);
  if (!server) return report_error(server.error());
  if (!dashboard::is_loopback(o.host))
    fmt::print(stderr,
               "kernel-code: warning: serving on {}, not loopback: the dashboard has no "
               "authentication, so anyone who can reach this address reads every session of {}\n",
               o.host, path.string());
  std::string url = (*server)->url();
  if (!o.session.empty()) url += "?session=" + percent_encode(o.session);
  fmt::print("kernel-code dashboard: {}\n", url);
  fmt::print(stderr, "serving {} (read-only); Ctrl-C stops\n", path.string());
  std::fflush(stdout);
  util::install_interrupt_handler();
  std::jthread watch([&](std::stop_token stop) {
    while (!stop.stop_requested() && !util::cancel_flag().load())
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (*server)->stop();
  });
  (*server)->run();
  watch.request_stop();
  return 0;
}

}  // namespace

void add_dashboard_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<DashboardOptions>();
  auto* cmd = app.add_subcommand("dashboard", "Serve the web dashboard of the store's sessions");
  cmd->add_option("--session", o->session, "Open on this session (the page has a picker)");
  cmd->add_option("--port", o->port, "Port; 0 picks a free one (the URL is printed)")
      ->default_val(8050)
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--host", o->host,
                  "Address to listen on; anything but loopback exposes the store (a warning says "
                  "so)")
      ->default_val("127.0.0.1");
  cmd->add_option("--db", o->g.db,
                  "Store database (default: $OPENKERNEL_DB, the config's, or "
                  "the default store)");
  cmd->add_option("--results", o->results,
                  "Results TSVs of sweeps for the Charts page (repeatable; the store's sessions "
                  "are charted too)");
  cmd->callback([&action, o] { action = [o] { return run_dashboard(*o); }; });
}

}  // namespace ok::cli
