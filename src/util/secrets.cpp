#include "util/secrets.hpp"

#include <algorithm>
#include <cctype>

extern char** environ;

namespace ok::util {

bool is_secret_env_name(std::string_view name) {
  for (auto exempt : kSecretExempt)
    if (name == exempt) return false;
  std::string upper(name);
  std::ranges::transform(upper, upper.begin(),
                         [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return std::ranges::any_of(
      kSecretWords, [&](std::string_view word) { return upper.find(word) != std::string::npos; });
}

std::vector<std::string> secret_env_names() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto name = entry.substr(0, entry.find('='));
    if (is_secret_env_name(name)) out.emplace_back(name);
  }
  return out;
}

}  // namespace ok::util
