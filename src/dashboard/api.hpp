// The dashboard's HTTP surface without the socket: a request (method, decoded path, query
// parameters) in, a response (status, content type, body, headers) out. Read-only by design:
// GET and HEAD only (405 otherwise), every route's parameters checked (400 for unknown, repeated,
// oversized or malformed ones), 404 with a JSON message for unknown sessions, attempts and
// routes; static files come only from the Site's list, so no request names a file on disk.
// docs/dashboard.md documents the routes and their JSON.
//
// Api borrows the Store and the Site. handle() is thread-safe: store queries are serialised by a
// mutex (one SQLite connection), which keeps every answer a consistent read.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "dashboard/site.hpp"
#include "store/store.hpp"
#include "util/error.hpp"

namespace ok::dashboard {

struct Request {
  std::string method;                                       // GET, HEAD, POST, ...
  std::string path;                                         // decoded, without the query
  std::vector<std::pair<std::string, std::string>> params;  // decoded, in order, repeats kept
  std::string if_none_match;  // the If-None-Match header (static files answer 304 on a match)
};

struct Response {
  int status = 200;
  std::string content_type;
  std::string body;
  std::map<std::string, std::string> headers;  // beyond Content-Type
};

// Limits on what a request may carry.
inline constexpr size_t kMaxPathBytes = 1024;
inline constexpr size_t kMaxParamBytes = 64;
inline constexpr size_t kMaxSessionIdBytes = 256;
inline constexpr int kMaxEvents = 1000;

// The Charts page's data (src/charts' chart_data over the dashboard's runs); empty function:
// the route answers that no results are loaded.
using ChartsSource = std::function<util::Result<nlohmann::json>()>;

class Api {
 public:
  Api(store::Store& store, const Site& site, ChartsSource charts = {})
      : store_(store), site_(site), charts_(std::move(charts)) {}

  Response handle(const Request& r);

 private:
  Response route_api(const Request& r, const std::vector<std::string>& parts);
  Response session_route(const Request& r, const std::vector<std::string>& parts);

  store::Store& store_;
  const Site& site_;
  ChartsSource charts_;
  std::mutex mu_;
};

// A JSON response: `status` with body `j` (invalid UTF-8 replaced, never thrown on).
Response json_response(int status, const nlohmann::json& j);
// {"error": message} with `status`.
Response error_response(int status, const std::string& message);

}  // namespace ok::dashboard
