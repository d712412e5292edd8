#include "hub/settings.hpp"

#include "util/paths.hpp"
#include "util/strings.hpp"

namespace ok::hub {

namespace fs = std::filesystem;

fs::path hf_home() {
  if (auto v = util::getenv_str("HF_HOME"); v && !v->empty()) return *v;
  if (auto v = util::getenv_str("XDG_CACHE_HOME"); v && !v->empty())
    return fs::path(*v) / "huggingface";
  const auto home = util::getenv_str("HOME");
  return fs::path(home ? *home : ".") / ".cache" / "huggingface";
}

fs::path hub_cache() {
  if (auto v = util::getenv_str("HF_HUB_CACHE"); v && !v->empty()) return *v;
  return hf_home() / "hub";
}

util::Result<Settings> settings_from_environment() {
  Settings s;
  s.endpoint = util::getenv_str("HF_ENDPOINT").value_or("");
  if (s.endpoint.empty()) s.endpoint = "https://huggingface.co";
  while (s.endpoint.ends_with('/')) s.endpoint.pop_back();
  if (!s.endpoint.starts_with("http://") && !s.endpoint.starts_with("https://"))
    return util::fail(util::ErrorKind::kBadInput,
                      "HF_ENDPOINT must be an http:// or https:// URL, not '" + s.endpoint + "'");
  if (auto v = util::getenv_str("HF_TOKEN"); v && !util::trim(*v).empty()) {
    s.token = util::trim(*v);
    s.token_source = "HF_TOKEN";
    return s;
  }
  fs::path file = hf_home() / "token";
  if (auto v = util::getenv_str("HF_TOKEN_PATH"); v && !v->empty()) file = *v;
  std::error_code ec;
  if (fs::exists(file, ec)) {
    auto text = util::read_file(file);
    if (!text) return std::unexpected(text.error());
    s.token = util::trim(*text);
    if (!s.token.empty()) s.token_source = file.string();
  }
  return s;
}

}  // namespace ok::hub
