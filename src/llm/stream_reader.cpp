#include "llm/stream_reader.hpp"

#include <fmt/core.h>

#include "llm/provider.hpp"

namespace ok::llm {

StreamReader::StreamReader(StreamSink* sink) : sink_(sink), start_(Clock::now()) {}

bool StreamReader::on_data(std::string_view chunk) {
  events_.clear();
  parser_.feed(chunk, events_);
  if (parser_.overflowed()) {
    error = "an event in the stream exceeded the size limit";
    return false;
  }
  for (const auto& e : events_)
    if (!handle(e)) return false;
  return true;
}

std::optional<nlohmann::json> StreamReader::parse(const SseEvent& e) {
  nlohmann::json j = nlohmann::json::parse(e.data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    error = fmt::format("malformed JSON in the stream: {}", e.data.substr(0, 120));
    return std::nullopt;
  }
  return j;
}

void StreamReader::mark_token() {
  if (!ttft_ms) ttft_ms = std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
}

Response StreamReader::response(std::string reply_text, std::string stop_reason, const Request& req,
                                const std::string& default_model) const {
  Response r;
  r.text = std::move(reply_text);
  r.stop_reason = std::move(stop_reason);
  r.model = model.empty() ? default_model : model;
  r.id = id;
  wire::set_usage(r, req, usage);
  r.ttft_ms = ttft_ms;
  return r;
}

void StreamReader::deliver(std::string& into, const std::string& piece) {
  mark_token();
  into += piece;
  if (sink_ && !piece.empty()) sink_->on_delta(piece);
}

}  // namespace ok::llm
