#include "dashboard/queries.hpp"

#include <cmath>
#include <utility>

#include "search/strategy.hpp"

namespace ok::dashboard {

namespace {

using nlohmann::json;
using store::Statement;

// A JSON column: parsed, or null when empty or unreadable (the page shows what it can).
json json_col(const Statement& row, int i) {
  if (row.col_null(i)) return nullptr;
  json j = json::parse(row.col_text(i), nullptr, false);
  return j.is_discarded() ? json(nullptr) : j;
}
json num_col(const Statement& row, int i) {
  return row.col_null(i) ? json(nullptr) : json(row.col_double(i));
}
json int_col(const Statement& row, int i) {
  return row.col_null(i) ? json(nullptr) : json(row.col_int(i));
}
json text_col(const Statement& row, int i) {
  return row.col_null(i) ? json(nullptr) : json(row.col_text(i));
}

template <class Read>
auto query(store::Store& st, std::string_view sql, const std::vector<json>& args, Read read)
    -> util::Result<std::vector<decltype(read(std::declval<const Statement&>()))>> {
  auto q = st.db().prepare(sql);
  if (!q) return std::unexpected(q.error());
  for (size_t i = 0; i < args.size(); ++i) {
    int idx = static_cast<int>(i) + 1;
    if (args[i].is_string())
      q->bind(idx, args[i].get<std::string>());
    else
      q->bind(idx, args[i].get<int64_t>());
  }
  return q->rows([&](const Statement& row) { return read(row); });
}

// The session columns every listing shows; `s` is sessions, `p` problems, `ss` the intent tree.
constexpr std::string_view kSessionColumns =
    "SELECT s.id, s.name, s.reference, s.backend, s.model, s.mode, s.status, s.best_attempt, "
    "s.best_speedup, s.compile_runtime_us, s.cost_usd, s.created_at, s.updated_at, "
    "(SELECT COUNT(*) FROM attempts a WHERE a.session = s.id), p.level, p.problem_number, "
    "json_extract(ss.json, '$.problem_class'), json_extract(ss.json, '$.strategy.id'), "
    "json_extract(ss.json, '$.policy') "
    "FROM sessions s LEFT JOIN problems p ON p.id = s.problem_id "
    "LEFT JOIN search_state ss ON ss.scope = s.id AND ss.kind = 'intents'";

json session_json(const Statement& r) {
  return {{"id", r.col_text(0)},
          {"name", r.col_text(1)},
          {"reference", r.col_text(2)},
          {"backend", r.col_text(3)},
          {"model", r.col_text(4)},
          {"mode", r.col_text(5)},
          {"status", r.col_text(6)},
          {"best_attempt", int_col(r, 7)},
          {"best_speedup", num_col(r, 8)},
          {"compile_runtime_us", num_col(r, 9)},
          {"cost_usd", r.col_double(10)},
          {"created_at", r.col_text(11)},
          {"updated_at", r.col_text(12)},
          {"attempts", r.col_int(13)},
          {"level", int_col(r, 14)},
          {"problem_number", int_col(r, 15)},
          {"problem_class", text_col(r, 16)},
          {"strategy", text_col(r, 17)},
          {"policy", text_col(r, 18)}};
}

json attempt_json(const Statement& r) {
  json params = json_col(r, 11);
  json diagnosis = json_col(r, 13);
  json roofline = json_col(r, 18);
  std::optional<double> runtime;
  if (!r.col_null(8)) runtime = r.col_double(8);
  return {{"number", r.col_int(0)},
          {"generator", r.col_text(1)},
          {"candidate_id", int_col(r, 2)},
          {"evaluation_id", int_col(r, 3)},
          {"path", r.col_text(4)},
          {"verdict", r.col_text(5)},
          {"correct", r.col_int(6) != 0},
          {"speedup", num_col(r, 7)},
          {"runtime_us", num_col(r, 8)},
          {"error", r.col_text(9)},
          {"cost_usd", r.col_double(10)},
          {"params", params},
          {"intent", params.is_object() && params.contains("intent") ? params["intent"] : json()},
          {"description", r.col_text(12)},
          {"diagnosis", diagnosis},
          {"bottleneck", diagnosis.is_object() ? diagnosis.value("bottleneck", json()) : json()},
          {"wall_s", r.col_double(14)},
          {"created_at", r.col_text(15)},
          {"device", text_col(r, 16)},
          {"flags", r.col_null(17) ? json::array() : json_col(r, 17)},
          {"roofline", roofline_figures(roofline, runtime)},
          {"ref_runtime_us", num_col(r, 19)},
          {"speedup_compile", num_col(r, 20)},
          {"profile", profile_figures(json_col(r, 21))}};
}

constexpr std::string_view kAttemptSql =
    "SELECT a.number, a.generator, a.candidate_id, a.evaluation_id, a.path, a.verdict, a.correct, "
    "a.speedup, a.runtime_us, a.error, a.cost_usd, a.params, a.description, a.diagnosis, a.wall_s, "
    "a.created_at, e.device, e.flags, json_extract(e.result, '$.roofline'), "
    "e.ref_runtime_median_us, json_extract(e.result, '$.speedup_compile'), "
    "json_object('tier', json_extract(e.result, '$.profile.tier'), 'tool', "
    "json_extract(e.result, '$.profile.tool'), 'kernel_metrics', "
    "json_extract(e.result, '$.profile.kernel_metrics')) "
    "FROM attempts a LEFT JOIN evaluations e ON e.id = a.evaluation_id "
    "WHERE a.session = ?1 ORDER BY a.number";

// The device's roofs: those of the latest attempt that measured them.
json device_of(const json& attempts) {
  for (auto it = attempts.rbegin(); it != attempts.rend(); ++it) {
    const json& rf = (*it)["roofline"];
    if (rf.is_object())
      return {{"name", (*it)["device"]},
              {"bandwidth_bytes_per_s", rf["bandwidth_bytes_per_s"]},
              {"peak_flops", rf["peak_flops"]}};
  }
  return nullptr;
}

double ratio(double a, double b) {
  return b > 0 ? a / b : 0;
}

// One strategy's figures on one class from its stored record (Population's own aggregates).
json class_figures(const search::Population& pop, const std::string& id, const std::string& cls,
                   const json& record, bool on_frontier) {
  auto ob = pop.objectives(id, cls);
  int problems = record.value("problems", 0);
  int no_gain = record.value("no_gain", 0);
  return {{"problems", ob.problems},
          {"correct", record.value("correct", 0)},
          {"correctness_rate", ob.correctness_rate},
          {"win_rate", problems > 0 ? ratio(problems - no_gain, problems) : 0.0},
          {"geomean_speedup", ob.geomean_speedup},
          {"cost_usd", ob.cost_usd},
          {"evaluations", record.value("evaluations", 0)},
          {"frontier", on_frontier}};
}

bool member(const std::vector<const search::Strategy*>& front, const std::string& id) {
  for (const auto* s : front)
    if (s->id == id) return true;
  return false;
}

}  // namespace

json roofline_figures(const json& rf, std::optional<double> runtime_us) {
  if (!rf.is_object() || !runtime_us || *runtime_us <= 0) return nullptr;
  double flops = rf.value("flops", 0.0), bytes = rf.value("bytes", 0.0);
  double bw = rf.value("bandwidth_bytes_per_s", 0.0), peak = rf.value("peak_flops", 0.0);
  double seconds = *runtime_us * 1e-6;
  double achieved_flops = flops / seconds, achieved_bw = bytes / seconds;
  return {{"flops", flops},
          {"bytes", bytes},
          {"intensity", bytes > 0 ? json(flops / bytes) : json()},
          {"achieved_flops", achieved_flops},
          {"achieved_bytes_per_s", achieved_bw},
          {"bandwidth_bytes_per_s", bw},
          {"peak_flops", peak},
          {"bandwidth_fraction", ratio(achieved_bw, bw)},
          {"compute_fraction", ratio(achieved_flops, peak)},
          {"floor_us", rf.value("floor_us", 0.0)},
          {"fraction_of_speed_of_light", rf.value("fraction_of_speed_of_light", 0.0)}};
}

namespace {

// A number at `key` of `j`, or 0 when absent or null.
double number_at(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

// The duration-weighted mean of a percentage over the kernels that report it, or null.
json weighted_pct(const json& kernels, const char* key) {
  double sum = 0, weight = 0;
  for (const auto& k : kernels) {
    double d = number_at(k, "duration_us");
    if (!k.is_object() || !k.contains(key) || !k[key].is_number() || d <= 0) continue;
    sum += k[key].get<double>() * d;
    weight += d;
  }
  return weight > 0 ? json(sum / weight) : json();
}

}  // namespace

json profile_figures(const json& p) {
  auto field = [&](const char* key) { return p.is_object() ? p.value(key, json()) : json(); };
  const json kernels = field("kernel_metrics");
  if (!kernels.is_array() || kernels.empty()) return nullptr;
  double flops = 0, bytes = 0, measured_us = 0, total_us = 0;
  size_t dominant = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const json& k = kernels[i];
    double d = number_at(k, "duration_us");
    total_us += d;
    if (d > number_at(kernels[dominant], "duration_us")) dominant = i;
    // ncu's measured FLOPs and DRAM bytes (docs/profiling.md); Proton's declared ones.
    const json& rf = k.is_object() && k.contains("roofline") ? k["roofline"] : k;
    double f = number_at(rf, "flops"),
           b = number_at(rf, rf.contains("dram_bytes") ? "dram_bytes" : "bytes");
    if (f > 0 && b > 0 && d > 0) {
      flops += f;
      bytes += b;
      measured_us += d;
    }
  }
  json roofline = nullptr;
  if (measured_us > 0)
    roofline = {{"flops", flops},
                {"dram_bytes", bytes},
                {"intensity", flops / bytes},
                {"flops_per_s", flops / (measured_us * 1e-6)},
                {"dram_bytes_per_s", bytes / (measured_us * 1e-6)}};
  const json& top = kernels[dominant];
  const json tool = field("tool");
  return {{"tier", field("tier")},
          {"tool", tool.is_object() ? tool.value("name", json()) : json()},
          {"kernels", kernels.size()},
          {"kernel", top.is_object() ? top.value("name", json("")) : json("")},
          {"duration_us", total_us},
          {"dram_throughput_pct", weighted_pct(kernels, "dram_throughput_pct")},
          {"sm_throughput_pct", weighted_pct(kernels, "sm_throughput_pct")},
          {"achieved_occupancy_pct", weighted_pct(kernels, "achieved_occupancy_pct")},
          {"roofline", roofline}};
}

std::string source_language(const std::string& path, const std::string& source) {
  auto ends = [&](std::string_view ext) {
    return path.size() >= ext.size() &&
           path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (ends(".cu") || ends(".cuh")) return "cuda";
  if (ends(".cpp") || ends(".cc") || ends(".hpp") || ends(".h")) return "cpp";
  if (ends(".py")) return "python";
  // No telling extension: a Python module has an import or a class.
  return source.find("import ") != std::string::npos ? "python" : "cpp";
}

util::Result<bool> Queries::has_session(const std::string& id) {
  auto rows = query(store_, "SELECT 1 FROM sessions WHERE id = ?1", {json(id)},
                    [](const Statement&) { return true; });
  if (!rows) return std::unexpected(rows.error());
  return !rows->empty();
}

util::Result<json> Queries::sessions() {
  auto rows = query(store_, std::string(kSessionColumns) + " ORDER BY s.created_at DESC, s.id", {},
                    session_json);
  if (!rows) return std::unexpected(rows.error());
  return json{{"sessions", std::move(*rows)}};
}

util::Result<std::optional<json>> Queries::session(const std::string& id) {
  // The newest event first: every attempt it announces is in the rows read after it, so a page
  // that polls events above it misses none (another process may write in between).
  auto last_event = query(store_, "SELECT COALESCE(MAX(id), 0) FROM events WHERE session = ?1",
                          {json(id)}, [](const Statement& r) { return r.col_int(0); });
  if (!last_event) return std::unexpected(last_event.error());
  auto rows =
      query(store_, std::string(kSessionColumns) + " WHERE s.id = ?1", {json(id)}, session_json);
  if (!rows) return std::unexpected(rows.error());
  if (rows->empty()) return std::optional<json>();
  auto attempts = query(store_, kAttemptSql, {json(id)}, attempt_json);
  if (!attempts) return std::unexpected(attempts.error());
  json a = std::move(*attempts);
  json device = device_of(a);
  return std::optional<json>(json{{"session", rows->front()},
                                  {"device", device},
                                  {"attempts", std::move(a)},
                                  {"last_event_id", last_event->front()}});
}

util::Result<std::optional<json>> Queries::attempt_source(const std::string& id, int number) {
  auto rows = query(store_,
                    "SELECT a.number, a.path, a.verdict, c.source, c.path FROM attempts a "
                    "LEFT JOIN candidates c ON c.id = a.candidate_id "
                    "WHERE a.session = ?1 AND a.number = ?2",
                    {json(id), json(number)}, [](const Statement& r) {
                      std::string path = r.col_text(1).empty() ? r.col_text(4) : r.col_text(1);
                      json j = {{"number", r.col_int(0)}, {"path", path}};
                      if (r.col_null(3)) {
                        j["source"] = nullptr;
                        j["language"] = nullptr;
                        j["reason"] = "no source was recorded (verdict " + r.col_text(2) + ")";
                      } else {
                        j["source"] = r.col_text(3);
                        j["language"] = source_language(path, r.col_text(3));
                      }
                      return j;
                    });
  if (!rows) return std::unexpected(rows.error());
  if (rows->empty()) return std::optional<json>();
  return std::optional<json>(rows->front());
}

util::Result<std::optional<json>> Queries::intents(const std::string& id) {
  auto exists = has_session(id);
  if (!exists) return std::unexpected(exists.error());
  if (!*exists) return std::optional<json>();
  auto text = store_.search_state(id, "intents");
  if (!text) return std::unexpected(text.error());
  json tree = *text ? json::parse(**text, nullptr, false) : json();
  if (tree.is_discarded()) tree = nullptr;
  return std::optional<json>(json{{"session", id}, {"tree", tree}});
}

util::Result<std::optional<json>> Queries::events(const std::string& id, int64_t after, int limit) {
  auto exists = has_session(id);
  if (!exists) return std::unexpected(exists.error());
  if (!*exists) return std::optional<json>();
  auto rows = store_.events_since(id, after, limit);
  if (!rows) return std::unexpected(rows.error());
  json events = json::array();
  int64_t last = after;
  for (const auto& e : *rows) {
    json payload = json::parse(e.payload_json, nullptr, false);
    events.push_back({{"id", e.id},
                      {"time", e.time},
                      {"kind", e.kind},
                      {"number", e.number},
                      {"total", e.total},
                      {"text", e.text},
                      {"payload", payload.is_discarded() ? json::object() : payload}});
    last = e.id;
  }
  return std::optional<json>(json{{"session", id}, {"events", events}, {"last_id", last}});
}

util::Result<json> Queries::strategies() {
  auto text = store_.search_state("global", "strategies");
  if (!text) return std::unexpected(text.error());
  json stored = *text ? json::parse(**text, nullptr, false) : json();
  auto pop = stored.is_object() ? search::Population::from_json(stored)
                                : util::Result<search::Population>(search::Population::seeded());
  if (!pop)
    return util::fail(util::ErrorKind::kBadInput,
                      "the stored strategy population is unreadable: " + pop.error().message);
  json full = pop->to_json();
  std::map<std::string, json> all_records;  // "" (all classes) summed per strategy
  json classes = json::array();
  std::map<std::string, std::vector<const search::Strategy*>> fronts{{"", pop->frontier("")}};
  auto records_of = [](const json& s) {
    return s.contains("records") && s["records"].is_object() ? s["records"] : json::object();
  };
  for (const auto& s : full["strategies"]) {
    json records = records_of(s);
    for (const auto& [cls, _] : records.items())
      if (!fronts.contains(cls)) {
        fronts[cls] = pop->frontier(cls);
        classes.push_back(cls);
      }
  }
  json out = json::array();
  for (const auto& s : full["strategies"]) {
    std::string id = s.value("id", "");
    json per_class = json::object();
    json total = {{"problems", 0}, {"no_gain", 0}, {"correct", 0}, {"evaluations", 0}};
    json records = records_of(s);
    for (const auto& [cls, rec] : records.items()) {
      per_class[cls] = class_figures(*pop, id, cls, rec, member(fronts[cls], id));
      for (const char* k : {"problems", "no_gain", "correct", "evaluations"})
        total[k] = total[k].get<int>() + rec.value(k, 0);
    }
    json item = s;
    item.erase("records");
    item["classes"] = per_class;
    item["all"] = class_figures(*pop, id, "", total, member(fronts[""], id));
    out.push_back(std::move(item));
  }
  return json{{"strategies", out}, {"classes", classes}};
}

util::Result<json> Queries::aggregates() {
  auto sessions = query(store_, std::string(kSessionColumns) + " ORDER BY s.created_at, s.id", {},
                        session_json);
  if (!sessions) return std::unexpected(sessions.error());
  auto rows = query(store_,
                    "SELECT a.session, a.number, a.correct, a.speedup, a.cost_usd, "
                    "(julianday(a.created_at) - julianday(s.created_at)) * 86400.0 "
                    "FROM attempts a JOIN sessions s ON s.id = a.session "
                    "ORDER BY a.session, a.number",
                    {}, [](const Statement& r) {
                      return std::tuple(
                          r.col_text(0), r.col_int(1), r.col_int(2) != 0,
                          r.col_null(3) ? std::optional<double>() : std::optional(r.col_double(3)),
                          r.col_double(4), r.col_double(5));
                    });
  if (!rows) return std::unexpected(rows.error());
  std::map<std::string, json> curves;
  std::map<std::string, std::pair<std::optional<double>, double>> running;  // best, cost
  for (const auto& [session, number, correct, speedup, cost, elapsed] : *rows) {
    auto& [best, spent] = running[session];
    if (correct && speedup && (!best || *speedup > *best)) best = speedup;
    spent += cost;
    curves[session].push_back(
        {number, std::round(elapsed * 1000) / 1000, best ? json(*best) : json(), spent});
  }
  json out = json::array();
  for (auto& s : *sessions) {
    std::string id = s["id"];
    s["curve"] = curves.contains(id) ? curves[id] : json::array();
    out.push_back(std::move(s));
  }
  return json{{"sessions", out},
              {"curve_columns", {"number", "elapsed_s", "best_speedup", "cost_usd"}}};
}

}  // namespace ok::dashboard
