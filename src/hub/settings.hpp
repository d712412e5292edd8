// Where the Hub is and who we are to it, read as the official Hugging Face tools read it.
//
// Endpoint: $HF_ENDPOINT, default https://huggingface.co. Token: $HF_TOKEN, else the token file
// ($HF_TOKEN_PATH, default $HF_HOME/token; $HF_HOME defaults to $XDG_CACHE_HOME/huggingface or
// ~/.cache/huggingface). The token lives only in memory: nothing here writes, prints or stores it
// (Settings has no formatter; messages name where the token came from, never its value).
#pragma once

#include <filesystem>
#include <string>

#include "util/error.hpp"

namespace ok::hub {

struct Settings {
  std::string endpoint;      // without a trailing slash
  std::string token;         // empty: anonymous
  std::string token_source;  // "HF_TOKEN", the token file's path, or empty
  int retries = 5;           // attempts after the first, for 429, 5xx and network failures
};

std::filesystem::path hf_home();
// The model cache of the official tools: $HF_HUB_CACHE, else $HF_HOME/hub.
std::filesystem::path hub_cache();
// The settings from the environment; bad input when HF_ENDPOINT is not an http(s) URL.
util::Result<Settings> settings_from_environment();

}  // namespace ok::hub
