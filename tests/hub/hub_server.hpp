// The loopback Hub's shared state and request helpers (hub_server.cpp: main, auth, test routes;
// hub_server_routes.cpp: the Hub API routes). A test tool; docs/hub.md, "Testing".
#pragma once

#include <httplib.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "repo_store.hpp"

namespace ok::hubtest {

enum class Role { kNone, kInvalid, kRead, kWrite };

struct Failure {
  int status = 0, count = 0;
  std::string match;
};

struct State {
  RepoStore store;
  std::string write_token, read_token, secret;
  std::mutex mutex;  // every route holds it: repositories change one request at a time
  std::vector<Failure> failures;
  std::vector<std::string> log;
};

void reply_error(httplib::Response& res, int status, const std::string& message,
                 const std::string& code = "");
Role role(const State& s, const httplib::Request& req);
// Refuses a write without a write token (401, or 403 for the read token); false when it answered.
bool may_write(const State& s, const httplib::Request& req, httplib::Response& res);
// The repository if the request may read it; otherwise answers 401 or 404.
std::optional<Repo> readable(State& s, const httplib::Request& req, httplib::Response& res,
                             const std::string& type, const std::string& name);
std::string base_url(const httplib::Request& req);
std::string sign(const State& s, const std::string& what);
// Streams a file with Range support.
void serve_file(httplib::Response& res, const std::filesystem::path& path);

void add_repo_routes(httplib::Server& http, State& s);
void add_lfs_routes(httplib::Server& http, State& s);
void add_read_routes(httplib::Server& http, State& s);

}  // namespace ok::hubtest
