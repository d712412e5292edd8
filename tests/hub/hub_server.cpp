// hub_test_server: a loopback server implementing the subset of the Hugging Face Hub HTTP API that
// `openkernel hub` and the official JS client (@huggingface/hub) use, for tests without the
// internet (docs/hub.md, "Testing"). Repositories live under --root (repo_store.hpp).
//
// Usage: hub_test_server --root DIR --write-token T [--read-token R] [--port N]
// Prints "port N" on stdout once listening. A token other than T or R is refused with 401; R may
// read but not write (403). POST /_test/fail {"status", "count", "match"} makes the next `count`
// requests whose path contains `match` fail with `status` (Retry-After: 0); GET /_test/log lists
// the requests served ("METHOD path", and the Range header's value when there is one). LFS upload
// and download hrefs carry a signature instead of the token, as the Hub's presigned storage URLs
// do.
#include "hub_server.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>

#include "util/digest.hpp"

namespace ok::hubtest {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {
// The request this thread serves: httplib answers each request on one thread.
thread_local httplib::Request* current_request = nullptr;
}  // namespace

void reply_error(httplib::Response& res, int status, const std::string& message,
                 const std::string& code) {
  if (current_request) current_request->ranges.clear();  // an error body is sent whole
  res.status = status;
  if (!code.empty()) res.set_header("X-Error-Code", code);
  res.set_content(json{{"error", message}}.dump(), "application/json");
}

Role role(const State& s, const httplib::Request& req) {
  const std::string auth = req.get_header_value("Authorization");
  if (auth.empty()) return Role::kNone;
  const std::string token = auth.starts_with("Bearer ") ? auth.substr(7) : "";
  if (!token.empty() && token == s.write_token) return Role::kWrite;
  if (!token.empty() && token == s.read_token) return Role::kRead;
  return Role::kInvalid;
}

bool may_write(const State& s, const httplib::Request& req, httplib::Response& res) {
  const Role r = role(s, req);
  if (r == Role::kWrite) return true;
  if (r == Role::kRead)
    reply_error(res, 403, "You don't have the rights to write to this repository");
  else
    reply_error(res, 401,
                r == Role::kNone ? "Authorization header is missing"
                                 : "Invalid credentials in Authorization header");
  return false;
}

std::optional<Repo> readable(State& s, const httplib::Request& req, httplib::Response& res,
                             const std::string& type, const std::string& name) {
  const Role r = role(s, req);
  if (r == Role::kInvalid) {
    reply_error(res, 401, "Invalid credentials in Authorization header");
    return std::nullopt;
  }
  auto repo = s.store.find(type, name);
  if (!repo || (repo->is_private && r == Role::kNone)) {
    reply_error(res, repo ? 401 : 404, "Repository not found", "RepoNotFound");
    return std::nullopt;
  }
  return repo;
}

std::string base_url(const httplib::Request& req) {
  return "http://" + req.get_header_value("Host");
}

std::string sign(const State& s, const std::string& what) {
  return ok::util::sha256_hex(s.secret + what);
}

void serve_file(httplib::Response& res, const fs::path& path) {
  const auto size = fs::file_size(path);
  res.set_header("Accept-Ranges", "bytes");
  res.set_content_provider(size, "application/octet-stream",
                           [path](size_t offset, size_t length, httplib::DataSink& sink) {
                             std::ifstream in(path, std::ios::binary);
                             in.seekg(static_cast<std::streamoff>(offset));
                             std::string buf(std::min<size_t>(length, 1 << 20), '\0');
                             in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
                             sink.write(buf.data(), static_cast<size_t>(in.gcount()));
                             return true;
                           });
}

void add_test_routes(httplib::Server& http, State& s) {
  http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    // Replies go uncompressed: Debian's cpp-httplib would Brotli-compress JSON bodies, and the
    // loopback gains nothing from it. The request is httplib's own object, not ours to share.
    const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
    current_request = &const_cast<httplib::Request&>(req);
    std::lock_guard lock(s.mutex);
    if (req.path.starts_with("/_test/")) return httplib::Server::HandlerResponse::Unhandled;
    const std::string range = req.get_header_value("Range");
    s.log.push_back(req.method + " " + req.path + (range.empty() ? "" : " " + range));
    for (auto& f : s.failures)
      if (f.count > 0 && req.path.find(f.match) != std::string::npos) {
        --f.count;
        res.set_header("Retry-After", "0");
        reply_error(res, f.status, fmt::format("injected failure {}", f.status));
        return httplib::Server::HandlerResponse::Handled;
      }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.Post("/_test/fail", [&s](const httplib::Request& req, httplib::Response& res) {
    const auto body = json::parse(req.body);
    std::lock_guard lock(s.mutex);
    s.failures.push_back(
        {body.value("status", 500), body.value("count", 1), body.value("match", "")});
    res.set_content("{}", "application/json");
  });
  http.Get("/_test/log", [&s](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(s.mutex);
    res.set_content(json(s.log).dump(), "application/json");
  });
}

}  // namespace ok::hubtest

int main(int argc, char** argv) {
  std::string root, write_token, read_token;
  int port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--root")
      root = value;
    else if (flag == "--write-token")
      write_token = value;
    else if (flag == "--read-token")
      read_token = value;
    else if (flag == "--port")
      port = std::stoi(value);
  }
  if (root.empty() || write_token.empty()) {
    std::cerr << "usage: hub_test_server --root DIR --write-token T [--read-token R] [--port N]\n";
    return 2;
  }
  std::random_device rd;
  ok::hubtest::State s{ok::hubtest::RepoStore(root), write_token, read_token,
                       fmt::format("{:x}{:x}{:x}", rd(), rd(), rd())};
  httplib::Server http;
  // Clients pool connections (node's fetch ignores the Keep-Alive max): never close one after a
  // count of requests, only when idle.
  http.set_keep_alive_max_count(100000);
  ok::hubtest::add_test_routes(http, s);
  ok::hubtest::add_repo_routes(http, s);
  ok::hubtest::add_lfs_routes(http, s);
  ok::hubtest::add_read_routes(http, s);
  const int bound = port ? (http.bind_to_port("127.0.0.1", port) ? port : -1)
                         : http.bind_to_any_port("127.0.0.1");
  if (bound <= 0) {
    std::cerr << "hub_test_server: cannot listen on 127.0.0.1\n";
    return 1;
  }
  std::cout << "port " << bound << std::endl;
  return http.listen_after_bind() ? 0 : 1;
}
