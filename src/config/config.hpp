// User configuration: ~/.config/openkernel/config.toml (or $XDG_CONFIG_HOME/openkernel).
//
// Keys (all optional): model, api_key, base_url, python, kernelbench_dir, db, eval_host. The file
// is written with mode 0600 because it may hold an API key. Unknown keys are kept on save.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "util/error.hpp"

namespace ok::config {

struct Config {
  std::optional<std::string> model;
  std::optional<std::string> api_key;
  std::optional<std::string> base_url;
  std::optional<std::string> python;
  std::optional<std::string> kernelbench_dir;
  std::optional<std::string> db;
  std::optional<std::string> eval_host;  // ssh://[user@]host[:port] (docs/remote.md)
};

std::filesystem::path default_path();  // $OPENKERNEL_CONFIG, else config_dir()/config.toml
// A missing file is an empty config; a malformed one is kBadInput naming the line.
util::Result<Config> load(const std::filesystem::path& path);
util::Result<Config> load_default();
// Merges `updates` into the file at `path` (creating it), mode 0600.
util::Result<void> save(const std::filesystem::path& path, const Config& updates);

}  // namespace ok::config
