#include "llm/http.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

#include "util/strings.hpp"

namespace ok::llm {

namespace {

using Clock = std::chrono::steady_clock;

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;
struct MultiDeleter {
  void operator()(CURLM* m) const { curl_multi_cleanup(m); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;
using MultiHandle = std::unique_ptr<CURLM, MultiDeleter>;

// An easy handle attached to a multi handle, detached on destruction.
struct Attached {
  Attached(CURLM* m, CURL* e) : multi(m), easy(e) {}
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;
  CURLM* multi;
  CURL* easy;
  ~Attached() { curl_multi_remove_handle(multi, easy); }
};

constexpr size_t kMaxErrorBody = 1 << 20;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Transfer {
  CURL* curl = nullptr;
  const HttpRequest* req = nullptr;
  HttpReader* reader = nullptr;
  HttpResponse* res = nullptr;
  Clock::time_point start;
  Clock::time_point last_data;
  bool got_data = false;
  bool reader_stopped = false;
  Transport abort_reason = Transport::kOk;
};

size_t on_write(char* ptr, size_t size, size_t n, void* ud) {
  auto* t = static_cast<Transfer*>(ud);
  const size_t len = size * n;
  const auto now = Clock::now();
  if (!t->got_data) {
    t->got_data = true;
    t->res->first_byte_ms = std::chrono::duration<double, std::milli>(now - t->start).count();
  }
  t->last_data = now;
  long code = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
  if (t->reader && code >= 200 && code < 300) {
    t->res->streamed_bytes += len;
    if (!t->reader->on_data(std::string_view(ptr, len))) {
      t->reader_stopped = true;
      return 0;
    }
    return len;
  }
  auto& body = t->res->body;
  if (body.size() < kMaxErrorBody) body.append(ptr, std::min(len, kMaxErrorBody - body.size()));
  return len;
}

size_t on_header(char* ptr, size_t size, size_t n, void* ud) {
  auto* t = static_cast<Transfer*>(ud);
  const size_t len = size * n;
  std::string_view line(ptr, len);
  if (line.starts_with("HTTP/")) {
    t->res->headers.clear();  // a new response (after 100 Continue or a proxy's CONNECT)
    return len;
  }
  std::string name, value;
  if (util::parse_header_line(line, name, value)) t->res->headers[name] = std::move(value);
  return len;
}

// Cancellation and the streaming timeouts; kOk while the transfer may go on.
Transport limit_reached(const Transfer& t) {
  if (t.req->cancel && t.req->cancel->load()) return Transport::kCancelled;
  if (!t.req->stream) return Transport::kOk;
  const auto now = Clock::now();
  const auto& to = t.req->timeouts;
  const bool token = t.reader ? t.reader->first_token_seen() : t.got_data;
  if (!token && to.first_token.count() > 0 && now - t.start > to.first_token)
    return Transport::kFirstTokenTimeout;
  if (token && to.idle.count() > 0 && now - t.last_data > to.idle) return Transport::kIdleTimeout;
  return Transport::kOk;
}

int on_progress(void* ud, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(ud);
  t->abort_reason = limit_reached(*t);
  return t->abort_reason == Transport::kOk ? 0 : 1;
}

Transport classify(CURLcode rc, CURL* curl) {
  switch (rc) {
    case CURLE_OK:
      return Transport::kOk;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return Transport::kBadUrl;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
      return Transport::kConnectFailed;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return Transport::kConnectionLost;
    case CURLE_OPERATION_TIMEDOUT: {
      double connect_s = 0;
      curl_easy_getinfo(curl, CURLINFO_CONNECT_TIME, &connect_s);
      return connect_s > 0 ? Transport::kTotalTimeout : Transport::kConnectTimeout;
    }
    default:
      return Transport::kOther;
  }
}

// Runs the transfer on a multi handle, polling at most every 100 ms so that cancellation and the
// streaming timeouts act promptly even while no data arrives.
CURLcode perform(CURL* c, Transfer& t) {
  MultiHandle multi(curl_multi_init());
  if (!multi) return CURLE_OUT_OF_MEMORY;
  if (curl_multi_add_handle(multi.get(), c) != CURLM_OK) return CURLE_FAILED_INIT;
  const Attached attached{multi.get(), c};
  while (true) {
    int running = 0;
    if (curl_multi_perform(multi.get(), &running) != CURLM_OK) return CURLE_FAILED_INIT;
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi.get(), &left))
      if (msg->msg == CURLMSG_DONE) return msg->data.result;
    if (running == 0) return CURLE_OK;
    if (t.abort_reason == Transport::kOk) t.abort_reason = limit_reached(t);
    if (t.abort_reason != Transport::kOk) return CURLE_ABORTED_BY_CALLBACK;
    curl_multi_poll(multi.get(), nullptr, 0, 100, nullptr);
  }
}

}  // namespace

HttpResponse http_post(const HttpRequest& request, HttpReader* reader) {
  global_init();
  HttpResponse res;
  CurlHandle curl(curl_easy_init());
  if (!curl) {
    res.transport = Transport::kOther;
    res.transport_message = "curl_easy_init failed";
    return res;
  }
  Slist headers;
  auto append = [&](const char* line) {
    if (curl_slist* head = curl_slist_append(headers.get(), line)) {
      (void)headers.release();
      headers.reset(head);
    }
  };
  for (const auto& h : request.headers) append(h.c_str());
  append("Expect:");

  Transfer t;
  t.curl = curl.get();
  t.req = &request;
  t.reader = reader;
  t.res = &res;
  char errbuf[CURL_ERROR_SIZE] = {0};

  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(request.timeouts.connect.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeouts.total.count()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "openkernel/0.1");

  t.start = Clock::now();
  t.last_data = t.start;
  const CURLcode rc = perform(c, t);
  res.elapsed_ms = ms_since(t.start);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res.status);

  if (rc == CURLE_ABORTED_BY_CALLBACK && t.abort_reason != Transport::kOk) {
    res.transport = t.abort_reason;
  } else if (rc == CURLE_WRITE_ERROR && t.reader_stopped) {
    res.transport = Transport::kStoppedByReader;
  } else {
    res.transport = classify(rc, c);
  }
  if (rc != CURLE_OK)
    res.transport_message = errbuf[0] != '\0' ? std::string(errbuf) : curl_easy_strerror(rc);
  return res;
}

}  // namespace ok::llm
