#include "hub/http.hpp"

#include <curl/curl.h>

#include <cstdio>
#include <memory>
#include <mutex>

#include "util/cancel.hpp"
#include "util/strings.hpp"

namespace ok::hub {

namespace {

constexpr size_t kMaxBody = 1 << 20;

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};
struct FileClose {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileClose>;

struct Sink {
  CURL* curl = nullptr;
  const HttpRequest* req = nullptr;
  HttpResponse* res = nullptr;
  File out;  // opened on the first 2xx byte
  bool write_failed = false;
};

bool success(CURL* curl) {
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  return code >= 200 && code < 300;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  const size_t len = size * n;
  if (!s->req->download_to.empty() && success(s->curl)) {
    if (!s->out) {
      long code = 0;  // a server that ignores Range answers 200 with the whole file
      curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &code);
      const bool resume = s->req->append && code == 206;
      s->out.reset(std::fopen(s->req->download_to.c_str(), resume ? "ab" : "wb"));
      if (!s->out) {
        s->write_failed = true;
        return 0;
      }
    }
    if (std::fwrite(data, 1, len, s->out.get()) != len) {
      s->write_failed = true;
      return 0;
    }
    return len;
  }
  auto& body = s->res->body;
  if (body.size() < kMaxBody) body.append(data, std::min(len, kMaxBody - body.size()));
  return len;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  const size_t len = size * n;
  std::string_view line(data, len);
  if (line.starts_with("HTTP/")) {
    s->res->headers.clear();  // a new response: after a redirect or 100 Continue
    return len;
  }
  std::string name, value;
  if (util::parse_header_line(line, name, value)) s->res->headers[name] = std::move(value);
  return len;
}

int on_progress(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return util::cancel_flag().load() ? 1 : 0;
}

}  // namespace

HttpResponse http_send(const HttpRequest& request) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  HttpResponse res;
  std::unique_ptr<CURL, CurlFree> curl(curl_easy_init());
  if (!curl) return {false, "curl_easy_init failed"};
  CURL* c = curl.get();
  curl_slist* list = nullptr;
  for (const auto& h : request.headers) list = curl_slist_append(list, h.c_str());
  list = curl_slist_append(list, "Expect:");
  std::unique_ptr<curl_slist, CurlFree> headers(list);

  Sink sink{c, &request, &res};
  File upload;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  if (!request.upload_file.empty()) {
    upload.reset(std::fopen(request.upload_file.c_str(), "rb"));
    if (!upload) return {false, "cannot read " + request.upload_file.string()};
    std::error_code ec;
    const auto size = std::filesystem::file_size(request.upload_file, ec);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READDATA, upload.get());
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(ec ? 0 : size));
  } else if (request.method == "POST" || request.method == "PUT") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }
  if (request.method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (request.method != "GET" && request.method != "HEAD" && request.method != "POST")
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 15000L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stalled transfer: 60 s without a byte
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &sink);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "openkernel/0.1; hub");

  const CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res.status);
  char* effective = nullptr;
  curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &effective);
  if (effective) res.effective_url = effective;
  if (sink.out && std::fflush(sink.out.get()) != 0) sink.write_failed = true;
  if (rc != CURLE_OK || sink.write_failed) {
    res.transport_ok = false;
    res.cancelled = rc == CURLE_ABORTED_BY_CALLBACK;
    res.transport_message = sink.write_failed   ? "cannot write " + request.download_to.string()
                            : errbuf[0] != '\0' ? std::string(errbuf)
                                                : curl_easy_strerror(rc);
  }
  return res;
}

std::string url_encode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace ok::hub
