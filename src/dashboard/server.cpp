#include "dashboard/server.hpp"

#include <arpa/inet.h>
#include <fmt/core.h>
#include <httplib.h>

namespace ok::dashboard {

namespace {

// The page loads only its own scripts, styles and data. Plotly sets inline styles on its
// elements and compiles WebGL shaders; it needs no eval.
constexpr const char* kContentPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self'; worker-src 'self' blob:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

Request to_request(const httplib::Request& req) {
  Request r{req.method, req.path, {}, req.get_header_value("If-None-Match")};
  for (const auto& [k, v] : req.params) r.params.emplace_back(k, v);
  return r;
}

void write(const Response& res, httplib::Response& out) {
  out.status = res.status;
  for (const auto& [k, v] : res.headers) out.set_header(k, v);
  out.set_header("X-Content-Type-Options", "nosniff");
  out.set_header("X-Frame-Options", "DENY");
  out.set_header("Referrer-Policy", "no-referrer");
  out.set_header("Content-Security-Policy", kContentPolicy);
  if (res.status != 304) out.set_content(res.body, res.content_type);
}

}  // namespace

struct Server::Impl {
  httplib::Server http;
};

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr v4{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

bool host_header_allowed(const std::string& host_header, int port) {
  if (host_header.empty()) return true;
  std::string name = host_header, p;
  if (auto close = host_header.rfind(']');
      host_header.starts_with('[') && close != std::string::npos) {
    name = host_header.substr(0, close + 1);
    if (close + 1 < host_header.size() && host_header[close + 1] == ':')
      p = host_header.substr(close + 2);
  } else if (auto colon = host_header.rfind(':'); colon != std::string::npos) {
    name = host_header.substr(0, colon);
    p = host_header.substr(colon + 1);
  }
  return is_loopback(name) && (p.empty() || p == std::to_string(port));
}

Server::Server(std::unique_ptr<Impl> impl, std::string host, int port)
    : impl_(std::move(impl)), host_(std::move(host)), port_(port) {}
Server::~Server() = default;

util::Result<std::unique_ptr<Server>> Server::bind(Api& api, const std::string& host, int port) {
  auto impl = std::make_unique<Impl>();
  bool loopback = is_loopback(host);
  auto holder = std::make_shared<int>(0);  // the bound port, known once bound
  impl->http.set_payload_max_length(64 * 1024);
  impl->http.set_read_timeout(10);
  // An answer is written in pieces (headers, then body): with Nagle's algorithm the last piece
  // waits for the client's delayed ACK, about 40 ms, on a kept-alive connection (the bench saw
  // every route's slowest answer at 44-53 ms while their medians were 2-5 ms).
  impl->http.set_tcp_nodelay(true);
  impl->http.set_pre_routing_handler(
      [&api, loopback, holder](const httplib::Request& req, httplib::Response& out) {
        // Debian's cpp-httplib compresses text, JavaScript and JSON bodies with Brotli at its
        // highest quality whenever the client accepts it: about 20 s for Plotly's full bundle (4.6
        // MB) here, and nothing gained on loopback. The request is httplib's own (non-const)
        // object, read again when the response is written: without the header it sends bodies as
        // they are.
        const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
        if (loopback && !host_header_allowed(req.get_header_value("Host"), *holder)) {
          write(error_response(421, "this dashboard answers only to a loopback Host"), out);
          return httplib::Server::HandlerResponse::Handled;
        }
        try {
          write(api.handle(to_request(req)), out);
        } catch (const std::exception& e) {  // a bug: answered, never left to httplib
          write(error_response(500, std::string("internal error: ") + e.what()), out);
        }
        return httplib::Server::HandlerResponse::Handled;
      });
  std::string bind_host = host == "localhost" ? "127.0.0.1" : host;
  if (bind_host.starts_with('[') && bind_host.ends_with(']'))
    bind_host = bind_host.substr(1, bind_host.size() - 2);
  int got = -1;
  if (port == 0)
    got = impl->http.bind_to_any_port(bind_host);
  else if (impl->http.bind_to_port(bind_host, port))
    got = port;
  if (got <= 0)
    return util::fail(
        util::ErrorKind::kEnvironment,
        fmt::format("cannot listen on {}:{} (in use? --port 0 picks a free port)", host, port));
  *holder = got;
  return std::unique_ptr<Server>(new Server(std::move(impl), host, got));
}

std::string Server::url() const {
  bool v6 = host_.find(':') != std::string::npos && !host_.starts_with('[');
  return fmt::format("http://{}{}{}:{}/", v6 ? "[" : "", host_, v6 ? "]" : "", port_);
}

void Server::run() {
  impl_->http.listen_after_bind();
}

void Server::stop() {
  impl_->http.stop();
}

}  // namespace ok::dashboard
