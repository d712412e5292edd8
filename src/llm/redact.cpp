#include "llm/redact.hpp"

namespace ok::llm {

void Redactor::add(std::string secret) {
  if (secret.size() >= 6) secrets_.push_back(std::move(secret));
}

std::string Redactor::apply(std::string_view text) const {
  std::string out(text);
  for (const auto& s : secrets_) {
    for (size_t pos = out.find(s); pos != std::string::npos; pos = out.find(s, pos)) {
      out.replace(pos, s.size(), kRedacted);
      pos += kRedacted.size();
    }
  }
  return out;
}

std::string mask_key(std::string_view key) {
  if (key.empty()) return "(not set)";
  if (key.size() < 16) return "****";
  return "****" + std::string(key.substr(key.size() - 4));
}

}  // namespace ok::llm
