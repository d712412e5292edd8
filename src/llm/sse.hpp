// An incremental parser for server-sent events (text/event-stream), fed bytes in arbitrary pieces.
//
// Follows the WHATWG rules the LLM APIs use: lines end in LF, CRLF or CR; `event:` and `data:`
// fields; comment lines start with ':'; a blank line ends an event. Not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ok::llm {

struct SseEvent {
  std::string event;  // empty when the event named no type
  std::string data;   // data lines joined with '\n'
};

class SseParser {
 public:
  // Appends every event that `chunk` completes to `out`.
  void feed(std::string_view chunk, std::vector<SseEvent>& out);
  // True when bytes of an unfinished event are pending (a stream that ends here was cut).
  bool has_partial() const { return !line_.empty() || has_fields_; }
  // True when a line grew past the limit; the parser drops the rest of the stream.
  bool overflowed() const { return overflowed_; }

 private:
  void on_line(std::string_view line, std::vector<SseEvent>& out);

  static constexpr size_t kMaxLine = 4u << 20;
  std::string line_;
  bool after_cr_ = false;
  bool has_fields_ = false;
  bool overflowed_ = false;
  std::string event_;
  std::string data_;
  bool has_data_ = false;
};

}  // namespace ok::llm
