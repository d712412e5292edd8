#include "fake_server.hpp"

#include <chrono>

namespace ok::llm::testing {

using nlohmann::json;

namespace {

std::vector<std::string> pieces(const std::string& text, size_t n = 3) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size(); i += n) out.push_back(text.substr(i, n));
  return out;
}

std::string sse(const json& data, const std::string& event = "") {
  std::string s = event.empty() ? "" : "event: " + event + "\n";
  return s + "data: " + data.dump() + "\n\n";
}

// Keeps the in-flight count while a handler runs.
class InFlight {
 public:
  InFlight(std::atomic<int>& now, std::atomic<int>& max) : now_(now) {
    const int v = ++now_;
    int m = max.load();
    while (v > m && !max.compare_exchange_weak(m, v)) {
    }
  }
  ~InFlight() { --now_; }

 private:
  std::atomic<int>& now_;
};

}  // namespace

FakeLlmServer::FakeLlmServer() {
  server_.Post("/v1/chat/completions",
               [this](const httplib::Request& q, httplib::Response& r) { handle_openai(q, r); });
  server_.Post("/v1/messages",
               [this](const httplib::Request& q, httplib::Response& r) { handle_anthropic(q, r); });
  port_ = server_.bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

FakeLlmServer::~FakeLlmServer() {
  stopping_ = true;
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

std::string FakeLlmServer::openai_url() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/v1";
}
std::string FakeLlmServer::anthropic_url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

void FakeLlmServer::script(std::vector<Step> steps) {
  std::lock_guard lock(mu_);
  steps_.assign(steps.begin(), steps.end());
}

void FakeLlmServer::set_reply(std::string text) {
  std::lock_guard lock(mu_);
  reply_ = std::move(text);
}

void FakeLlmServer::set_delay_ms(int ms) {
  std::lock_guard lock(mu_);
  delay_ms_ = ms;
}

std::vector<Received> FakeLlmServer::received() const {
  std::lock_guard lock(mu_);
  return received_;
}

bool FakeLlmServer::pause(int ms) const {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (stopping_) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return !stopping_;
}

Step FakeLlmServer::next_step(const httplib::Request& req, const json& body) {
  ++hits_;
  std::lock_guard lock(mu_);
  Received rec{req.path, {}, body};
  for (const char* h : {"Authorization", "x-api-key", "anthropic-version", "Accept"})
    if (req.has_header(h)) rec.headers[h] = req.get_header_value(h);
  received_.push_back(std::move(rec));
  Step s;
  if (!steps_.empty()) {
    s = steps_.front();
    steps_.pop_front();
  } else {
    s.delay_ms = delay_ms_;
  }
  if (s.text.empty()) s.text = reply_;
  return s;
}

namespace {

// Handles what both APIs do alike; true when the step was answered.
bool common(const Step& s, const httplib::Request& req, httplib::Response& res,
            const std::string& key_header) {
  if (s.behaviour == Behaviour::kStatus) {
    res.status = s.status;
    for (const auto& [k, v] : s.headers) res.set_header(k, v);
    res.set_content(s.body, "application/json");
    return true;
  }
  if (s.behaviour == Behaviour::kEchoKey401) {
    std::string key = req.get_header_value(key_header);
    if (key.starts_with("Bearer ")) key = key.substr(7);
    res.status = 401;
    res.set_content(json{{"type", "error"},
                         {"error",
                          {{"type", "authentication_error"},
                           {"message", "Incorrect API key provided: " + key}}}}
                        .dump(),
                    "application/json");
    return true;
  }
  return false;
}

}  // namespace

void FakeLlmServer::handle_openai(const httplib::Request& req, httplib::Response& res) {
  InFlight guard(in_flight_, max_in_flight_);
  const json body = json::parse(req.body, nullptr, false);
  const Step s = next_step(req, body);
  if (common(s, req, res, "Authorization")) return;
  const bool stream = body.value("stream", false);
  const std::string model = body.value("model", "unknown");
  const bool usage = s.behaviour != Behaviour::kNoUsage;
  if (!stream) {
    if (!pause(s.delay_ms)) return;
    if (s.behaviour == Behaviour::kMalformed) {
      res.set_content("{\"choices\": [ {\"message\": ", "application/json");
      return;
    }
    json j = {{"id", "chatcmpl-1"},
              {"object", "chat.completion"},
              {"model", model},
              {"choices", json::array({{{"index", 0},
                                        {"message", {{"role", "assistant"}, {"content", s.text}}},
                                        {"finish_reason", "stop"}}})}};
    if (usage) j["usage"] = {{"prompt_tokens", 12}, {"completion_tokens", 3}, {"total_tokens", 15}};
    res.set_content(j.dump(), "application/json");
    return;
  }
  const bool include_usage = usage && body.contains("stream_options") &&
                             body["stream_options"].value("include_usage", false);
  res.set_chunked_content_provider("text/event-stream", [this, s, model, include_usage](
                                                            size_t, httplib::DataSink& sink) {
    if (!pause(s.delay_ms)) return false;
    auto chunk = [&](const json& delta, const json& finish) {
      return sse({{"id", "chatcmpl-1"},
                  {"object", "chat.completion.chunk"},
                  {"model", model},
                  {"choices",
                   json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}});
    };
    auto write = [&](const std::string& d) { return sink.write(d.data(), d.size()); };
    if (!write(chunk({{"role", "assistant"}, {"content", ""}}, nullptr))) return false;
    const auto parts = pieces(s.text);
    for (size_t i = 0; i < parts.size(); ++i) {
      if (s.behaviour == Behaviour::kMalformed && i == 1) {
        write("data: {\"choices\": [\n\n");
        sink.done();
        return true;
      }
      if (s.behaviour == Behaviour::kCutStream && i == 1) return false;
      if (s.behaviour == Behaviour::kErrorEvent && i == 1) {
        write(sse({{"error", {{"message", "upstream overloaded"}, {"type", "server_error"}}}}));
        sink.done();
        return true;
      }
      if (!write(chunk({{"content", parts[i]}}, nullptr))) return false;
    }
    if (s.behaviour == Behaviour::kNoEndMarker) {
      sink.done();
      return true;
    }
    write(chunk(json::object(), "stop"));
    if (include_usage)
      write(sse({{"id", "chatcmpl-1"},
                 {"choices", json::array()},
                 {"usage", {{"prompt_tokens", 12}, {"completion_tokens", 3}}}}));
    write("data: [DONE]\n\n");
    sink.done();
    return true;
  });
}

void FakeLlmServer::handle_anthropic(const httplib::Request& req, httplib::Response& res) {
  InFlight guard(in_flight_, max_in_flight_);
  const json body = json::parse(req.body, nullptr, false);
  const Step s = next_step(req, body);
  if (common(s, req, res, "x-api-key")) return;
  const bool stream = body.value("stream", false);
  const std::string model = body.value("model", "unknown");
  const bool tools = body.contains("tools");
  const bool usage = s.behaviour != Behaviour::kNoUsage;
  if (!stream) {
    if (!pause(s.delay_ms)) return;
    if (s.behaviour == Behaviour::kMalformed) {
      res.set_content("{\"content\": [ {\"type\": \"te", "application/json");
      return;
    }
    json content = tools ? json::array({{{"type", "tool_use"},
                                         {"id", "toolu_1"},
                                         {"name", "reply"},
                                         {"input", json::parse(s.text, nullptr, false)}}})
                         : json::array({{{"type", "text"}, {"text", s.text}}});
    json j = {{"id", "msg_1"},       {"type", "message"},
              {"role", "assistant"}, {"model", model},
              {"content", content},  {"stop_reason", tools ? "tool_use" : "end_turn"}};
    if (usage) j["usage"] = {{"input_tokens", 12}, {"output_tokens", 3}};
    res.set_content(j.dump(), "application/json");
    return;
  }
  res.set_chunked_content_provider(
      "text/event-stream", [this, s, model, tools, usage](size_t, httplib::DataSink& sink) {
        auto write = [&](const std::string& d) { return sink.write(d.data(), d.size()); };
        json start = {{"type", "message_start"},
                      {"message",
                       {{"id", "msg_1"},
                        {"type", "message"},
                        {"role", "assistant"},
                        {"model", model},
                        {"content", json::array()}}}};
        if (usage) start["message"]["usage"] = {{"input_tokens", 12}, {"output_tokens", 1}};
        if (!write(sse(start, "message_start"))) return false;
        if (!pause(s.delay_ms)) return false;
        json block = tools ? json{{"type", "tool_use"},
                                  {"id", "toolu_1"},
                                  {"name", "reply"},
                                  {"input", json::object()}}
                           : json{{"type", "text"}, {"text", ""}};
        write(sse({{"type", "content_block_start"}, {"index", 0}, {"content_block", block}},
                  "content_block_start"));
        write(sse({{"type", "ping"}}, "ping"));
        const auto parts = pieces(s.text);
        for (size_t i = 0; i < parts.size(); ++i) {
          if (s.behaviour == Behaviour::kMalformed && i == 1) {
            write("event: content_block_delta\ndata: {\"type\": \"content_bl\n\n");
            sink.done();
            return true;
          }
          if (s.behaviour == Behaviour::kCutStream && i == 1) return false;
          if (s.behaviour == Behaviour::kErrorEvent && i == 1) {
            write(sse({{"type", "error"},
                       {"error", {{"type", "overloaded_error"}, {"message", "Overloaded"}}}},
                      "error"));
            sink.done();
            return true;
          }
          json delta = tools ? json{{"type", "input_json_delta"}, {"partial_json", parts[i]}}
                             : json{{"type", "text_delta"}, {"text", parts[i]}};
          if (!write(sse({{"type", "content_block_delta"}, {"index", 0}, {"delta", delta}},
                         "content_block_delta")))
            return false;
        }
        write(sse({{"type", "content_block_stop"}, {"index", 0}}, "content_block_stop"));
        json md = {{"type", "message_delta"},
                   {"delta", {{"stop_reason", tools ? "tool_use" : "end_turn"}}}};
        if (usage) md["usage"] = {{"output_tokens", 3}};
        write(sse(md, "message_delta"));
        if (s.behaviour != Behaviour::kNoEndMarker)
          write(sse({{"type", "message_stop"}}, "message_stop"));
        sink.done();
        return true;
      });
}

}  // namespace ok::llm::testing
