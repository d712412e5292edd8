#include "util/paths.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#ifndef OPENKERNEL_SOURCE_ROOT
#define OPENKERNEL_SOURCE_ROOT "."
#endif

namespace fs = std::filesystem;

namespace ok::util {

std::optional<std::string> getenv_str(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

static fs::path home() {
  if (auto h = getenv_str("HOME")) return *h;
  return "/tmp";
}

static fs::path xdg(const char* var, const char* fallback) {
  if (auto v = getenv_str(var)) return fs::path(*v) / "openkernel";
  return home() / fallback / "openkernel";
}

fs::path config_dir() {
  return xdg("XDG_CONFIG_HOME", ".config");
}
fs::path data_dir() {
  return xdg("XDG_DATA_HOME", ".local/share");
}
fs::path cache_dir() {
  return xdg("XDG_CACHE_HOME", ".cache");
}

static bool looks_like_root(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p / "python/openkernel_worker/__init__.py", ec);
}

fs::path resource_root() {
  if (auto h = getenv_str("OPENKERNEL_HOME")) return *h;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path p = exe.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
      if (looks_like_root(p)) return p;
      if (looks_like_root(p / "share/openkernel")) return p / "share/openkernel";
    }
  }
  return OPENKERNEL_SOURCE_ROOT;
}

Result<std::string> read_file(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(p, ec)) return fail(ErrorKind::kBadInput, "file not found: " + p.string());
  if (fs::is_directory(p, ec))
    return fail(ErrorKind::kBadInput, p.string() + " is a directory, not a file");
  std::ifstream in(p, std::ios::binary);
  if (!in) return fail(ErrorKind::kBadInput, "cannot read " + p.string() + " (permission denied?)");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail(ErrorKind::kBadInput, "error while reading " + p.string());
  return ss.str();
}

Result<void> write_file(const fs::path& p, std::string_view content) {
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  if (!out) return fail(ErrorKind::kBadInput, "cannot write " + p.string());
  out << content;
  if (!out) return fail(ErrorKind::kBadInput, "error while writing " + p.string());
  return {};
}

}  // namespace ok::util
