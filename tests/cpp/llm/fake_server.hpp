// A loopback HTTP server that speaks the OpenAI Chat Completions and Anthropic Messages APIs,
// streaming or not, and misbehaves on cue: error statuses with Retry-After, malformed JSON, a
// stream cut mid-way or ending without its end marker, an error event, a slow first token.
//
// Binds 127.0.0.1 on an ephemeral port in the constructor and stops in the destructor. Scripted
// steps are consumed one per request, then replies are plain successes. Thread-safe.
#pragma once

#include <httplib.h>

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace ok::llm::testing {

enum class Behaviour {
  kOk,
  kStatus,       // `status` with `body` and `headers`
  kEchoKey401,   // 401 whose message repeats the key it was sent
  kMalformed,    // 200 with broken JSON (a broken event when streaming)
  kCutStream,    // streaming: close the connection after a few deltas
  kNoEndMarker,  // streaming: end cleanly without [DONE] / message_stop
  kErrorEvent,   // streaming: an error event after one delta
  kNoUsage,      // success without usage figures
};

struct Step {
  Behaviour behaviour = Behaviour::kOk;
  int status = 200;
  std::string body;
  std::map<std::string, std::string> headers;
  int delay_ms = 0;  // before the first byte (streaming: before the first token)
  std::string text;  // reply text; empty: the server's default reply
};

struct Received {
  std::string path;
  std::map<std::string, std::string> headers;  // authorization, x-api-key, anthropic-version
  nlohmann::json body;
};

class FakeLlmServer {
 public:
  FakeLlmServer();
  ~FakeLlmServer();
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  int port() const { return port_; }
  std::string openai_url() const;     // http://127.0.0.1:PORT/v1
  std::string anthropic_url() const;  // http://127.0.0.1:PORT

  void script(std::vector<Step> steps);
  void set_reply(std::string text);
  void set_delay_ms(int ms);  // for every plain success
  int hits() const { return hits_.load(); }
  int max_in_flight() const { return max_in_flight_.load(); }
  std::vector<Received> received() const;

 private:
  Step next_step(const httplib::Request& req, const nlohmann::json& body);
  void handle_openai(const httplib::Request& req, httplib::Response& res);
  void handle_anthropic(const httplib::Request& req, httplib::Response& res);
  bool pause(int ms) const;  // false when the server is stopping

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> hits_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
  mutable std::mutex mu_;
  std::deque<Step> steps_;
  std::string reply_ = "pong";
  int delay_ms_ = 0;
  std::vector<Received> received_;
};

}  // namespace ok::llm::testing
