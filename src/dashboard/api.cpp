#include "dashboard/api.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <optional>

#include "dashboard/queries.hpp"

namespace ok::dashboard {

namespace {

using nlohmann::json;

// What the route index (GET /api) lists; docs/dashboard.md has the same table.
const json kRoutes = json::array({
    "GET /api/sessions",
    "GET /api/sessions/ID",
    "GET /api/sessions/ID/attempts/N/source",
    "GET /api/sessions/ID/intents",
    "GET /api/sessions/ID/events?after=EVENT_ID&limit=N",
    "GET /api/strategies",
    "GET /api/aggregates",
    "GET /api/charts",
});

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 1;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  if (!parts.empty() && parts.back().empty()) parts.pop_back();  // a trailing slash
  return parts;
}

// The request's parameters checked against those the route takes: nullopt when they pass, else
// the 400 to answer.
std::optional<Response> check_params(const Request& r, std::vector<std::string> allowed) {
  std::vector<std::string> seen;
  for (const auto& [name, value] : r.params) {
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      std::string takes;
      for (const auto& a : allowed) takes += (takes.empty() ? "" : ", ") + a;
      return error_response(
          400, fmt::format("unknown parameter '{:.64}' ({})", name,
                           takes.empty() ? "this route takes none" : "this route takes " + takes));
    }
    if (std::find(seen.begin(), seen.end(), name) != seen.end())
      return error_response(400, "parameter '" + name + "' is given more than once");
    if (value.size() > kMaxParamBytes)
      return error_response(400, fmt::format("parameter '{}' is too long ({} bytes, at most {})",
                                             name, value.size(), kMaxParamBytes));
    seen.push_back(name);
  }
  return std::nullopt;
}

// A decimal integer in [lo, hi] (digits only: no sign, spaces or exponent).
std::optional<int64_t> parse_int(std::string_view s, int64_t lo, int64_t hi) {
  if (s.empty() || s.size() > 18 || !std::all_of(s.begin(), s.end(), ::isdigit)) return {};
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi) return {};
  return v;
}

std::string param(const Request& r, const std::string& name, std::string fallback) {
  for (const auto& [n, v] : r.params)
    if (n == name) return v;
  return fallback;
}

bool valid_session_id(const std::string& id) {
  return !id.empty() && id.size() <= kMaxSessionIdBytes &&
         std::none_of(id.begin(), id.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

Response from_result(const util::Result<json>& j) {
  if (!j) return error_response(500, j.error().message);
  return json_response(200, *j);
}

Response from_optional(const util::Result<std::optional<json>>& j, const std::string& missing) {
  if (!j) return error_response(500, j.error().message);
  if (!*j) return error_response(404, missing);
  return json_response(200, **j);
}

Response static_file(const Site& site, const Request& r) {
  const SiteFile* f = site.find(r.path);
  if (!f) return error_response(404, fmt::format("no such page: {:.200}", r.path));
  Response res;
  res.headers["ETag"] = f->etag;
  // A versioned path names these bytes for good; a plain one is revalidated on every use.
  res.headers["Cache-Control"] =
      site.immutable(r.path) ? "public, max-age=31536000, immutable" : "no-cache";
  if (!f->etag.empty() && r.if_none_match == f->etag) {
    res.status = 304;
    return res;
  }
  res.content_type = f->content_type;
  res.body = f->body;
  return res;
}

}  // namespace

Response json_response(int status, const json& j) {
  Response res;
  res.status = status;
  res.content_type = "application/json";
  res.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  res.headers["Cache-Control"] = "no-store";
  return res;
}

Response error_response(int status, const std::string& message) {
  return json_response(status, json{{"error", message}, {"status", status}});
}

Response Api::handle(const Request& r) {
  if (r.method != "GET" && r.method != "HEAD") {
    Response res = error_response(
        405, fmt::format("method {:.16} not allowed: the dashboard is read-only (GET and HEAD)",
                         r.method));
    res.headers["Allow"] = "GET, HEAD";
    return res;
  }
  if (r.path.size() > kMaxPathBytes)
    return error_response(400, fmt::format("the path is too long ({} bytes, at most {})",
                                           r.path.size(), kMaxPathBytes));
  if (r.path.empty() || r.path[0] != '/') return error_response(400, "the path must start with /");
  auto parts = split_path(r.path);
  if (!parts.empty() && parts[0] == "api") {
    std::lock_guard lock(mu_);
    return route_api(r, parts);
  }
  if (auto bad = check_params(r, {"session"})) return *bad;
  return static_file(site_, r);
}

Response Api::route_api(const Request& r, const std::vector<std::string>& parts) {
  Queries q(store_);
  std::string what = parts.size() > 1 ? parts[1] : "";
  if (parts.size() > 2 && what == "sessions") return session_route(r, parts);
  if (auto bad = check_params(r, {})) return *bad;
  if (parts.size() == 1) return json_response(200, json{{"routes", kRoutes}});
  if (parts.size() == 2) {
    if (what == "sessions") return from_result(q.sessions());
    if (what == "strategies") return from_result(q.strategies());
    if (what == "aggregates") return from_result(q.aggregates());
    if (what == "charts") {
      auto charts = charts_ ? charts_()
                            : util::fail(util::ErrorKind::kBadInput,
                                         "no results loaded (kernel-code dashboard --results "
                                         "RESULTS.tsv)");
      // Nothing to chart is a state of the page, not a failure.
      if (!charts && charts.error().kind == util::ErrorKind::kBadInput)
        return json_response(200,
                             json{{"charts", json::array()}, {"note", charts.error().message}});
      return from_result(charts);
    }
  }
  return error_response(404, fmt::format("no API route {:.200} (GET /api lists them)", r.path));
}

Response Api::session_route(const Request& r, const std::vector<std::string>& parts) {
  Queries q(store_);
  const std::string& id = parts[2];
  if (!valid_session_id(id))
    return error_response(
        400, fmt::format("a session id is 1 to {} printable bytes", kMaxSessionIdBytes));
  std::string missing = fmt::format("no session '{}' in the store", id);
  std::string rest = parts.size() > 3 ? parts[3] : "";
  if (parts.size() == 3) {
    if (auto bad = check_params(r, {})) return *bad;
    return from_optional(q.session(id), missing);
  }
  if (parts.size() == 4 && rest == "intents") {
    if (auto bad = check_params(r, {})) return *bad;
    return from_optional(q.intents(id), missing);
  }
  if (parts.size() == 4 && rest == "events") {
    if (auto bad = check_params(r, {"after", "limit"})) return *bad;
    auto after = parse_int(param(r, "after", "0"), 0, INT64_MAX / 2);
    if (!after) return error_response(400, "parameter 'after' must be an event id (0 or more)");
    auto limit = parse_int(param(r, "limit", std::to_string(kMaxEvents)), 1, kMaxEvents);
    if (!limit)
      return error_response(400, fmt::format("parameter 'limit' must be 1 to {}", kMaxEvents));
    return from_optional(q.events(id, *after, static_cast<int>(*limit)), missing);
  }
  if (parts.size() == 6 && rest == "attempts" && parts[5] == "source") {
    if (auto bad = check_params(r, {})) return *bad;
    auto number = parse_int(parts[4], 0, 1'000'000'000);
    if (!number) return error_response(400, "an attempt number is a whole number");
    auto exists = q.has_session(id);
    if (!exists) return error_response(500, exists.error().message);
    if (!*exists) return error_response(404, missing);
    return from_optional(q.attempt_source(id, static_cast<int>(*number)),
                         fmt::format("session '{}' has no attempt {}", id, *number));
  }
  return error_response(404, fmt::format("no API route {:.200} (GET /api lists them)", r.path));
}

}  // namespace ok::dashboard
