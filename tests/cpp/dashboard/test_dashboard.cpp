// The dashboard's JSON API (src/dashboard/api.*) over a synthetic session, its security rules
// (read-only, parameters checked, unknown sessions 404 with a message, static files only from the
// site's list) and the HTTP server on a loopback port (Host check, methods, oversized requests).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "charts/data.hpp"
#include "charts/inputs.hpp"
#include "dashboard/api.hpp"
#include "dashboard/queries.hpp"
#include "dashboard/server.hpp"
#include "dashboard/site.hpp"
#include "dashboard_synth.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using ok::dashboard::Api;
using ok::dashboard::Request;
using ok::dashboard::Response;

namespace {

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto st = ok::store::Store::open(temp_.path() / "db.sqlite");
    ASSERT_TRUE(st) << st.error().message;
    store_.emplace(std::move(*st));
    ok::bench::SynthOptions o;
    o.session = "s1";
    o.attempts = 12;
    ASSERT_EQ(ok::bench::synthesise(*store_, o), "");
    ok::store::SessionRow empty;
    empty.id = "empty";
    empty.name = "nothing yet";
    empty.status = "running";
    ASSERT_TRUE(store_->insert_session(empty));
    api_.emplace(*store_, site_);
  }
  Response get(const std::string& path,
               std::vector<std::pair<std::string, std::string>> params = {},
               const std::string& method = "GET") {
    return api_->handle(Request{method, path, std::move(params)});
  }
  json get_json(const std::string& path,
                std::vector<std::pair<std::string, std::string>> params = {}) {
    Response r = get(path, std::move(params));
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    return json::parse(r.body);
  }
  static std::string error_of(const Response& r) { return json::parse(r.body).value("error", ""); }
  int64_t count(const std::string& table) {
    auto q = store_->db().prepare("SELECT COUNT(*) FROM " + table);
    return q->step_int().value_or(-1);
  }

  ok::testing::TempDir temp_{"ok-dashboard"};
  std::optional<ok::store::Store> store_;
  ok::dashboard::Site site_{{{"/", {"text/html; charset=utf-8", "<html>page</html>"}},
                             {"/index.html", {"text/html; charset=utf-8", "<html>page</html>"}},
                             {"/js/app.js", {"text/javascript; charset=utf-8", "// app"}}}};
  std::optional<Api> api_;
};

}  // namespace

TEST_F(DashboardTest, SessionsListEverySessionWithItsFigures) {
  json j = get_json("/api/sessions");
  ASSERT_EQ(j["sessions"].size(), 2u);
  json s1;
  for (const auto& s : j["sessions"])
    if (s["id"] == "s1") s1 = s;
  EXPECT_EQ(s1["attempts"], 12);
  EXPECT_EQ(s1["status"], "finished");
  EXPECT_EQ(s1["problem_class"], "pointwise");
  EXPECT_EQ(s1["strategy"], "seed-balanced");
  EXPECT_TRUE(s1["best_speedup"].is_number());
}

TEST_F(DashboardTest, ASessionCarriesItsAttemptsWithRooflineFigures) {
  json j = get_json("/api/sessions/s1");
  ASSERT_EQ(j["attempts"].size(), 12u);
  EXPECT_EQ(j["session"]["id"], "s1");
  EXPECT_DOUBLE_EQ(j["device"]["peak_flops"].get<double>(), 5.12e11);
  const json& a = j["attempts"][0];
  EXPECT_EQ(a["number"], 1);
  EXPECT_TRUE(a["params"]["cpu-tiled"].contains("block"));
  EXPECT_EQ(a["intent"]["id"], 1);
  double runtime = a["runtime_us"];
  const json& rf = a["roofline"];
  EXPECT_DOUBLE_EQ(rf["intensity"].get<double>(), 5242880.0 / 8388608.0);
  EXPECT_DOUBLE_EQ(rf["achieved_flops"].get<double>(), 5242880.0 / (runtime * 1e-6));
  EXPECT_DOUBLE_EQ(rf["bandwidth_fraction"].get<double>(), 8388608.0 / (runtime * 1e-6) / 5e9);
  // The best attempt is the session's best.
  int best = j["session"]["best_attempt"];
  EXPECT_EQ(j["attempts"][best - 1]["speedup"], j["session"]["best_speedup"]);
}

// A deep profile's kernels as ncu_report.parse_raw writes them (docs/profiling.md): two kernels,
// one without the throughput metrics.
json deep_profile() {
  return {{"tier", "deep"},
          {"tool", {{"name", "ncu"}, {"version", "2025.1"}}},
          {"kernel_metrics",
           {{{"name", "softmax_kernel"},
             {"duration_us", 30.0},
             {"dram_throughput_pct", 90.0},
             {"sm_throughput_pct", 30.0},
             {"achieved_occupancy_pct", 80.0},
             {"roofline", {{"flops", 3e6}, {"dram_bytes", 6e7}}}},
            {{"name", "reduce_kernel"},
             {"duration_us", 10.0},
             {"dram_throughput_pct", 50.0},
             {"sm_throughput_pct", nullptr},
             {"roofline", {{"flops", 1e6}, {"dram_bytes", nullptr}}}}}}};
}

TEST(DashboardProfile, MeasuredFiguresFromAProfilesKernels) {
  json f = ok::dashboard::profile_figures(deep_profile());
  EXPECT_EQ(f["tier"], "deep");
  EXPECT_EQ(f["tool"], "ncu");
  EXPECT_EQ(f["kernels"], 2);
  EXPECT_EQ(f["kernel"], "softmax_kernel");  // the longest
  EXPECT_DOUBLE_EQ(f["duration_us"].get<double>(), 40.0);
  // Duration-weighted over the kernels reporting the metric.
  EXPECT_DOUBLE_EQ(f["dram_throughput_pct"].get<double>(), (90.0 * 30 + 50.0 * 10) / 40);
  EXPECT_DOUBLE_EQ(f["sm_throughput_pct"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(f["achieved_occupancy_pct"].get<double>(), 80.0);
  // The roofline from the kernels that measured both FLOPs and bytes: the first only.
  EXPECT_DOUBLE_EQ(f["roofline"]["flops"].get<double>(), 3e6);
  EXPECT_DOUBLE_EQ(f["roofline"]["intensity"].get<double>(), 3e6 / 6e7);
  EXPECT_DOUBLE_EQ(f["roofline"]["flops_per_s"].get<double>(), 3e6 / 30e-6);
  // Nothing measured: null, whatever else the profile holds.
  EXPECT_TRUE(ok::dashboard::profile_figures(json{{"tier", "basic"}, {"kernels", json::array()}})
                  .is_null());
  EXPECT_TRUE(ok::dashboard::profile_figures(json{{"kernel_metrics", json::array()}}).is_null());
  EXPECT_TRUE(ok::dashboard::profile_figures(json("garbage")).is_null());
  // Proton's kernels: times, and FLOPs and bytes where a Triton kernel declares them (no
  // throughputs: the gauges stay the estimate's).
  json proton = ok::dashboard::profile_figures(json::parse(R"({"tier": "proton",
      "tool": {"name": "proton"}, "kernel_metrics": [{"name": "k", "count": 1,
      "duration_us": 20.0, "flops": 4e6, "bytes": 8e6}]})"));
  EXPECT_EQ(proton["tool"], "proton");
  EXPECT_TRUE(proton["dram_throughput_pct"].is_null());
  EXPECT_DOUBLE_EQ(proton["roofline"]["intensity"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(proton["roofline"]["dram_bytes_per_s"].get<double>(), 8e6 / 20e-6);
  json odd = ok::dashboard::profile_figures(json{{"kernel_metrics", {1, "x", nullptr}}});
  EXPECT_EQ(odd["kernels"], 3);
  EXPECT_TRUE(odd["dram_throughput_pct"].is_null());
  EXPECT_TRUE(odd["roofline"].is_null());
}

TEST(DashboardProfile, AnAttemptsRecordedProfileReachesTheApi) {
  ok::testing::TempDir temp{"ok-dashboard-profile"};
  auto st = ok::store::Store::open(temp.path() / "db.sqlite");
  ASSERT_TRUE(st) << st.error().message;
  ok::bench::SynthOptions o;
  o.session = "p";
  o.attempts = 30;
  o.profile = deep_profile();
  ASSERT_EQ(ok::bench::synthesise(*st, o), "");
  ok::dashboard::Site site{{{"/", {"text/html; charset=utf-8", "<html></html>"}}}};
  Api api(*st, site);
  json j = json::parse(api.handle(Request{"GET", "/api/sessions/p", {}}).body);
  int profiled = 0;
  for (const auto& a : j["attempts"]) {
    bool expected = a["correct"].get<bool>() && a["number"].get<int>() % 10 == 0;
    EXPECT_EQ(a["profile"].is_object(), expected) << "attempt " << a["number"];
    if (!a["profile"].is_object()) continue;
    ++profiled;
    EXPECT_EQ(a["profile"], ok::dashboard::profile_figures(deep_profile()));
  }
  EXPECT_GT(profiled, 0);
}

TEST_F(DashboardTest, AnAttemptsSourceAndItsLanguage) {
  json j = get_json("/api/sessions/s1/attempts/3/source");
  EXPECT_EQ(j["language"], "python");
  EXPECT_NE(j["source"].get<std::string>().find("load_inline"), std::string::npos);
  Response missing = get("/api/sessions/s1/attempts/99/source");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(error_of(missing), "session 's1' has no attempt 99");
  for (const char* bad : {"x", "-1", "1e3", "3.0", "99999999999999999999"})
    EXPECT_EQ(get(std::string("/api/sessions/s1/attempts/") + bad + "/source").status, 400) << bad;
}

TEST_F(DashboardTest, TheIntentTreeOrNullForASessionWithout) {
  json j = get_json("/api/sessions/s1/intents");
  EXPECT_EQ(j["tree"]["intents"].size(), 13u);
  EXPECT_TRUE(get_json("/api/sessions/empty/intents")["tree"].is_null());
}

TEST_F(DashboardTest, EventsAfterAnId) {
  json all = get_json("/api/sessions/s1/events");
  ASSERT_EQ(all["events"].size(), 14u);  // started, 12 attempt_finished, stopped
  int64_t third = all["events"][2]["id"];
  json rest =
      get_json("/api/sessions/s1/events", {{"after", std::to_string(third)}, {"limit", "5"}});
  ASSERT_EQ(rest["events"].size(), 5u);
  EXPECT_GT(rest["events"][0]["id"].get<int64_t>(), third);
  EXPECT_EQ(rest["last_id"], rest["events"][4]["id"]);
  json none = get_json("/api/sessions/s1/events", {{"after", "999999"}});
  EXPECT_TRUE(none["events"].empty());
  EXPECT_EQ(none["last_id"], 999999);
}

TEST_F(DashboardTest, ASessionNamesItsNewestEventSoThePagePollsFromThere) {
  json all = get_json("/api/sessions/s1/events");
  EXPECT_EQ(get_json("/api/sessions/s1")["last_event_id"], all["last_id"]);
  EXPECT_GT(all["last_id"].get<int64_t>(), 0);
  EXPECT_EQ(get_json("/api/sessions/empty")["last_event_id"], 0);  // no event yet
}

TEST_F(DashboardTest, UnknownSessionsAnswer404WithAMessage) {
  for (const char* path : {"/api/sessions/nope", "/api/sessions/nope/intents",
                           "/api/sessions/nope/events", "/api/sessions/nope/attempts/1/source"}) {
    Response r = get(path);
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(error_of(r), "no session 'nope' in the store") << path;
  }
  Response r = get("/api/nothing");
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(error_of(r).find("no API route /api/nothing"), std::string::npos);
}

TEST_F(DashboardTest, MalformedAndOversizedParametersAre400) {
  struct Case {
    std::vector<std::pair<std::string, std::string>> params;
    std::string says;
  };
  std::vector<Case> cases = {
      {{{"after", "-1"}}, "'after' must be an event id"},
      {{{"after", "1;DROP TABLE events"}}, "'after' must be an event id"},
      {{{"after", " 1"}}, "'after' must be an event id"},
      {{{"after", ""}}, "'after' must be an event id"},
      {{{"after", std::string(30, '9')}}, "'after' must be an event id"},
      {{{"limit", "0"}}, "'limit' must be 1 to 1000"},
      {{{"limit", "1001"}}, "'limit' must be 1 to 1000"},
      {{{"after", std::string(65, '1')}}, "too long"},
      {{{"after", "1"}, {"after", "2"}}, "more than once"},
      {{{"sort", "x"}}, "unknown parameter 'sort'"},
  };
  for (const auto& c : cases) {
    Response r = get("/api/sessions/s1/events", c.params);
    EXPECT_EQ(r.status, 400) << c.says;
    EXPECT_NE(error_of(r).find(c.says), std::string::npos) << error_of(r);
  }
  EXPECT_EQ(get("/api/sessions", {{"x", "1"}}).status, 400);
  EXPECT_EQ(get("/api/sessions/" + std::string(300, 'a')).status, 400);
  EXPECT_EQ(get("/api/sessions/a\x01"
                "b")
                .status,
            400);
  EXPECT_EQ(get("/" + std::string(2000, 'a')).status, 400);
}

TEST_F(DashboardTest, NoWriteEndpoint) {
  int64_t sessions = count("sessions"), attempts = count("attempts"), events = count("events");
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    for (const char* path : {"/api/sessions", "/api/sessions/s1", "/", "/api/sessions/s1/events"}) {
      Response r = get(path, {}, method);
      EXPECT_EQ(r.status, 405) << method << " " << path;
      EXPECT_EQ(r.headers["Allow"], "GET, HEAD");
    }
  }
  EXPECT_EQ(count("sessions"), sessions);
  EXPECT_EQ(count("attempts"), attempts);
  EXPECT_EQ(count("events"), events);
}

TEST_F(DashboardTest, StaticFilesComeOnlyFromTheSitesList) {
  EXPECT_EQ(get("/").body, "<html>page</html>");
  Response app = get("/js/app.js");
  ASSERT_FALSE(app.headers["ETag"].empty());
  Response again = api_->handle(Request{"GET", "/js/app.js", {}, app.headers["ETag"]});
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());
  EXPECT_EQ(get("/js/app.js").content_type, "text/javascript; charset=utf-8");
  for (const char* path : {"/../db.sqlite", "/js/../../db.sqlite", "/..%2fdb.sqlite",
                           "/js/../index.html", "//etc/passwd", "/./index.html", "/db.sqlite"}) {
    Response r = get(path);
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.body.find("SQLite"), std::string::npos) << path;
  }
}

TEST_F(DashboardTest, VersionedPathsAreImmutableAndThePageNamesThem) {
  ok::dashboard::Site site({{"/index.html",
                             {"text/html; charset=utf-8",
                              "<script src=\"/js/app.js\"></script>"
                              "<link href=\"/style.css\"> \"/js/app.jsx\""}},
                            {"/js/app.js", {"text/javascript; charset=utf-8", "// app"}},
                            {"/style.css", {"text/css; charset=utf-8", "body {}"}}});
  const std::string& v = site.prefix();
  ASSERT_TRUE(v.starts_with("/static/")) << v;
  // Every quoted path of a file is rewritten; other text stays.
  EXPECT_EQ(site.find("/index.html")->body, "<script src=\"" + v + "/js/app.js\"></script>" +
                                                "<link href=\"" + v +
                                                "/style.css\"> \"/js/app.jsx\"");
  Api api(*store_, site);
  Response plain = api.handle(Request{"GET", "/js/app.js", {}});
  EXPECT_EQ(plain.headers["Cache-Control"], "no-cache");
  Response versioned = api.handle(Request{"GET", v + "/js/app.js", {}});
  EXPECT_EQ(versioned.status, 200);
  EXPECT_EQ(versioned.body, "// app");
  EXPECT_EQ(versioned.headers["Cache-Control"], "public, max-age=31536000, immutable");
  EXPECT_EQ(versioned.headers["ETag"], plain.headers["ETag"]);
  EXPECT_EQ(api.handle(Request{"GET", v + "/index.html", {}}).status, 404);  // never the page
  EXPECT_EQ(api.handle(Request{"GET", v + "/", {}}).status, 404);
  EXPECT_EQ(api.handle(Request{"GET", v + "/../js/app.js", {}}).status, 404);
  EXPECT_EQ(api.handle(Request{"GET", "/static/0000000000000000/js/app.js", {}}).status, 404);
  // Other bytes, another version: a browser never keeps a stale file under a versioned path.
  ok::dashboard::Site changed({{"/index.html", {"text/html; charset=utf-8", ""}},
                               {"/js/app.js", {"text/javascript; charset=utf-8", "// app 2"}},
                               {"/style.css", {"text/css; charset=utf-8", "body {}"}}});
  EXPECT_NE(changed.prefix(), v);
}

TEST_F(DashboardTest, SiteLoadReadsTheWebFolderAndRefusesAMissingPackage) {
  fs::path web = temp_.path() / "web", modules = temp_.path() / "node_modules";
  fs::create_directories(web / "js");
  std::ofstream(web / "index.html") << "<html></html>";
  std::ofstream(web / "js" / "app.js") << "// app";
  std::ofstream(temp_.path() / "secret.txt") << "secret";
  auto missing = ok::dashboard::Site::load(web, modules);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("scripts/setup.sh"), std::string::npos);
  for (const auto& v : ok::dashboard::vendor_files()) {
    fs::create_directories((modules / v.package_path).parent_path());
    std::ofstream(modules / v.package_path) << "/* vendor */";
  }
  auto site = ok::dashboard::Site::load(web, modules);
  ASSERT_TRUE(site) << site.error().message;
  EXPECT_NE(site->find("/js/app.js"), nullptr);
  EXPECT_NE(site->find("/vendor/plotly-cartesian.min.js"), nullptr);  // the Charts page's
  EXPECT_EQ(site->find("/index.html")->body, site->find("/")->body);
  EXPECT_EQ(site->find("/../secret.txt"), nullptr);
  EXPECT_EQ(site->size(), 6u);  // index.html, /, app.js and three vendor files
}

TEST_F(DashboardTest, StrategiesCarryPerClassFiguresAndTheFrontier) {
  json j = get_json("/api/strategies");
  EXPECT_EQ(j["classes"], json::array({"pointwise"}));
  json balanced;
  for (const auto& s : j["strategies"])
    if (s["id"] == "seed-balanced") balanced = s;
  const json& pw = balanced["classes"]["pointwise"];
  EXPECT_EQ(pw["problems"], 1);
  EXPECT_EQ(pw["frontier"], true);
  EXPECT_DOUBLE_EQ(pw["correctness_rate"].get<double>(), 1.0);
  EXPECT_EQ(balanced["all"]["problems"], 1);
  EXPECT_FALSE(balanced.contains("records"));
}

TEST_F(DashboardTest, AggregatesGiveEachSessionsBestSoFarCurve) {
  json j = get_json("/api/aggregates");
  json s1;
  for (const auto& s : j["sessions"])
    if (s["id"] == "s1") s1 = s;
  ASSERT_EQ(s1["curve"].size(), 12u);
  double best = 0;
  for (const auto& p : s1["curve"]) {
    if (p[2].is_null()) continue;
    EXPECT_GE(p[2].get<double>(), best);
    best = p[2];
    EXPECT_GE(p[1].get<double>(), 0);
  }
  EXPECT_DOUBLE_EQ(best, s1["best_speedup"].get<double>());
}

TEST_F(DashboardTest, ChartsAreChartDataOfTheStore) {
  ok::charts::Sources sources;
  sources.dbs = {temp_.path() / "db.sqlite"};
  Api with_charts(*store_, site_, [&]() -> ok::util::Result<json> {
    auto in = ok::charts::load_inputs(sources);
    if (!in) return std::unexpected(in.error());
    return ok::charts::chart_data(*in);
  });
  Response r = with_charts.handle(Request{"GET", "/api/charts", {}, ""});
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  auto in = ok::charts::load_inputs(sources);
  ASSERT_TRUE(in) << in.error().message;
  EXPECT_EQ(j, ok::charts::chart_data(*in));
  ASSERT_TRUE(j.contains("charts")) << r.body.substr(0, 300);
  bool scaling = false;
  for (const auto& c : j["charts"]) scaling = scaling || c["id"] == "scaling";
  EXPECT_TRUE(scaling);
  // A source with nothing to chart answers a note, not an error.
  Api empty(*store_, site_, []() -> ok::util::Result<json> {
    return ok::util::fail(ok::util::ErrorKind::kBadInput, "no runs");
  });
  json note = json::parse(empty.handle(Request{"GET", "/api/charts", {}, ""}).body);
  EXPECT_EQ(note["note"], "no runs");
}

TEST_F(DashboardTest, ChartsWithoutResultsSaySo) {
  json j = get_json("/api/charts");
  EXPECT_TRUE(j["charts"].empty());
  EXPECT_NE(j["note"].get<std::string>().find("--results"), std::string::npos);
}

TEST(DashboardHost, OnlyLoopbackHostsReachALoopbackServer) {
  using ok::dashboard::host_header_allowed;
  using ok::dashboard::is_loopback;
  EXPECT_TRUE(is_loopback("127.0.0.1"));
  EXPECT_TRUE(is_loopback("127.1.2.3"));
  EXPECT_TRUE(is_loopback("::1"));
  EXPECT_TRUE(is_loopback("localhost"));
  EXPECT_FALSE(is_loopback("0.0.0.0"));
  EXPECT_FALSE(is_loopback("127.0.0.1.evil.example"));
  EXPECT_FALSE(is_loopback("10.0.0.1"));
  EXPECT_TRUE(host_header_allowed("127.0.0.1:8050", 8050));
  EXPECT_TRUE(host_header_allowed("localhost:8050", 8050));
  EXPECT_TRUE(host_header_allowed("[::1]:8050", 8050));
  EXPECT_TRUE(host_header_allowed("localhost", 8050));
  EXPECT_TRUE(host_header_allowed("", 8050));
  EXPECT_FALSE(host_header_allowed("evil.example:8050", 8050));
  EXPECT_FALSE(host_header_allowed("127.0.0.1:9999", 8050));
  EXPECT_FALSE(host_header_allowed("127.0.0.1.evil.example:8050", 8050));
}

// A raw HTTP/1.1 exchange, for requests a client library would normalise or refuse to send.
static std::string raw_request(int port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "";
  }
  (void)!::write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

TEST_F(DashboardTest, TheServerOnAFreeLoopbackPort) {
  auto server = ok::dashboard::Server::bind(*api_, "127.0.0.1", 0);
  ASSERT_TRUE(server) << server.error().message;
  int port = (*server)->port();
  ASSERT_GT(port, 0);
  EXPECT_EQ((*server)->url(), "http://127.0.0.1:" + std::to_string(port) + "/");
  std::thread t([&] { (*server)->run(); });
  httplib::Client cli("127.0.0.1", port);
  auto ok = cli.Get("/api/sessions/s1");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_NE(ok->get_header_value("Content-Security-Policy").find("default-src 'self'"),
            std::string::npos);
  auto post = cli.Post("/api/sessions", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  auto del = cli.Delete("/api/sessions/s1");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
  // Bodies go out uncompressed (httplib's Brotli took seconds per megabyte).
  auto plain = cli.Get("/api/sessions/s1", {{"Accept-Encoding", "br, gzip, deflate"}});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->get_header_value("Content-Encoding"), "");
  EXPECT_EQ(plain->body, ok->body);
  auto rebound = cli.Get("/api/sessions", {{"Host", "attacker.example"}});
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 421);
  std::string traversal = raw_request(
      port, "GET /../../../../etc/passwd HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(traversal.find(" 404 "), std::string::npos) << traversal.substr(0, 200);
  EXPECT_EQ(traversal.find("root:"), std::string::npos);
  std::string encoded = raw_request(
      port,
      "GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(encoded.find("root:"), std::string::npos);
  EXPECT_EQ(encoded.find(" 200 "), std::string::npos) << encoded.substr(0, 200);
  std::string huge =
      raw_request(port, "GET /api/sessions?after=" + std::string(20000, '1') +
                            " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(huge.find(" 200 "), std::string::npos) << huge.substr(0, 200);
  EXPECT_EQ(cli.Get("/api/sessions")->status, 200);  // still serving
  (*server)->stop();
  t.join();
}
