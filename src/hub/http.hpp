// One HTTP exchange with the Hub over libcurl (TLS, redirects, streamed uploads and downloads).
//
// A request body is a string or a file streamed from disk; a 2xx reply body goes to a string or
// is streamed to a file (appended when resuming with a Range request). A non-2xx body is always
// kept in `body` (at most 1 MiB) for the error message. Each call owns its curl handle and may run
// on any thread. Header values are never logged or stored here: the caller's Authorization header
// stays in memory. Ctrl-C (util/cancel.hpp) stops a transfer.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace ok::hub {

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, POST, PUT
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  std::filesystem::path upload_file;  // when set, the body is this file (PUT)
  std::filesystem::path download_to;  // when set, a 2xx body is written to this file
  bool append = false;  // a 206 reply is appended to download_to (a resumed Range request)
  bool follow_redirects = false;
};

struct HttpResponse {
  bool transport_ok = true;
  std::string transport_message;               // curl's description when !transport_ok
  bool cancelled = false;                      // Ctrl-C stopped it
  long status = 0;                             // 0 when no response arrived
  std::map<std::string, std::string> headers;  // lower-case names, of the last response
  std::string body;                            // the body unless streamed to download_to
  std::string effective_url;                   // after redirects
};

HttpResponse http_send(const HttpRequest& request);

// Percent-encodes every byte outside A-Z a-z 0-9 - _ . ~ (and '/' when keep_slash).
std::string url_encode(std::string_view text, bool keep_slash);

}  // namespace ok::hub
