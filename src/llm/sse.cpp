#include "llm/sse.hpp"

namespace ok::llm {

void SseParser::feed(std::string_view chunk, std::vector<SseEvent>& out) {
  if (overflowed_) return;
  for (char c : chunk) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // the LF of a CRLF
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      on_line(line_, out);
      line_.clear();
      continue;
    }
    line_.push_back(c);
    if (line_.size() > kMaxLine) {
      overflowed_ = true;
      return;
    }
  }
}

void SseParser::on_line(std::string_view line, std::vector<SseEvent>& out) {
  if (line.empty()) {
    if (has_data_) out.push_back(SseEvent{event_, data_});
    event_.clear();
    data_.clear();
    has_data_ = false;
    has_fields_ = false;
    return;
  }
  if (line.front() == ':') return;
  std::string_view field = line;
  std::string_view value;
  if (const auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  has_fields_ = true;
  if (field == "event") {
    event_ = std::string(value);
  } else if (field == "data") {
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  }
}

}  // namespace ok::llm
