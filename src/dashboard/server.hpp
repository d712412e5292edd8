// The dashboard's HTTP server: cpp-httplib (Debian's libcpp-httplib-dev) bound to one address,
// every request of any method handed to the Api (so the Api alone decides what is answered: GET
// and HEAD only). Security headers on every response (no sniffing, no framing, a same-origin
// content policy). Bound to a loopback address, it also refuses requests whose Host header names
// another host (421), which keeps a web page the user visits from reading the store through DNS
// rebinding.
//
// The Server borrows the Api. run() blocks until stop(); stop() is safe from another thread.
#pragma once

#include <memory>
#include <string>

#include "dashboard/api.hpp"
#include "util/error.hpp"

namespace ok::dashboard {

// 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& host);

// Whether a request's Host header may reach a server bound to loopback on `port`: absent, or a
// loopback name with this port (or none).
bool host_header_allowed(const std::string& host_header, int port);

class Server {
 public:
  // Binds `host`:`port` (port 0: a free port). kEnvironment when it cannot be bound.
  static util::Result<std::unique_ptr<Server>> bind(Api& api, const std::string& host, int port);
  ~Server();

  int port() const { return port_; }
  // http://HOST:PORT/ (IPv6 hosts in brackets).
  std::string url() const;
  // Serves until stop().
  void run();
  void stop();

 private:
  struct Impl;
  Server(std::unique_ptr<Impl> impl, std::string host, int port);
  std::unique_ptr<Impl> impl_;
  std::string host_;
  int port_ = 0;
};

}  // namespace ok::dashboard
