// Keeps API keys out of everything the LLM layer writes: error messages, recorded calls, output.
//
// Redactor holds copies of the secrets it removes; it is immutable after construction and safe to
// share between threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ok::llm {

inline constexpr std::string_view kRedacted = "[REDACTED]";

class Redactor {
 public:
  Redactor() = default;
  explicit Redactor(std::string secret) { add(std::move(secret)); }
  // Secrets shorter than 6 characters are ignored: they would mangle ordinary text.
  void add(std::string secret);
  std::string apply(std::string_view text) const;

 private:
  std::vector<std::string> secrets_;
};

// A key as it may be shown: "****" and its last four characters (none of them when it is short).
std::string mask_key(std::string_view key);

}  // namespace ok::llm
