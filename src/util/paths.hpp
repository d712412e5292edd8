// Where OpenKernel keeps its files: XDG config, data and cache directories, and the location of
// the project's own resources (the Python worker and data/) relative to the running binary.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "util/error.hpp"

namespace ok::util {

std::filesystem::path config_dir();  // $XDG_CONFIG_HOME/openkernel or ~/.config/openkernel
std::filesystem::path data_dir();    // $XDG_DATA_HOME/openkernel or ~/.local/share/openkernel
std::filesystem::path cache_dir();   // $XDG_CACHE_HOME/openkernel or ~/.cache/openkernel

// The folder holding python/openkernel_worker and data/: $OPENKERNEL_HOME, else found by walking
// up from the executable's directory, else the source tree the binary was built from.
std::filesystem::path resource_root();

std::optional<std::string> getenv_str(const char* name);
Result<std::string> read_file(const std::filesystem::path& p);
Result<void> write_file(const std::filesystem::path& p, std::string_view content);

}  // namespace ok::util
