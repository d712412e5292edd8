#include "config/config.hpp"

#include <sys/stat.h>
#include <toml++/toml.h>

#include <fstream>
#include <sstream>

#include "util/paths.hpp"

namespace ok::config {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::fail;

fs::path default_path() {
  if (auto p = util::getenv_str("OPENKERNEL_CONFIG")) return *p;
  return util::config_dir() / "config.toml";
}

static std::optional<std::string> get(const toml::table& t, const char* key) {
  if (auto v = t[key].value<std::string>()) return *v;
  return std::nullopt;
}

util::Result<Config> load(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Config{};
  toml::table t;
  try {
    t = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    std::ostringstream ss;
    ss << "malformed config file " << path.string() << " at line " << e.source().begin.line << ": "
       << e.description();
    return fail(ErrorKind::kBadInput, ss.str());
  }
  Config c;
  c.model = get(t, "model");
  c.api_key = get(t, "api_key");
  c.base_url = get(t, "base_url");
  c.python = get(t, "python");
  c.kernelbench_dir = get(t, "kernelbench_dir");
  c.db = get(t, "db");
  c.eval_host = get(t, "eval_host");
  return c;
}

util::Result<Config> load_default() {
  return load(default_path());
}

util::Result<void> save(const fs::path& path, const Config& updates) {
  toml::table t;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    try {
      t = toml::parse_file(path.string());
    } catch (const toml::parse_error& e) {
      return fail(ErrorKind::kBadInput,
                  "malformed config file " + path.string() +
                      "; fix or remove it first: " + std::string(e.description()));
    }
  }
  auto put = [&](const char* key, const std::optional<std::string>& v) {
    if (v) t.insert_or_assign(key, *v);
  };
  put("model", updates.model);
  put("api_key", updates.api_key);
  put("base_url", updates.base_url);
  put("python", updates.python);
  put("kernelbench_dir", updates.kernelbench_dir);
  put("db", updates.db);
  put("eval_host", updates.eval_host);
  fs::create_directories(path.parent_path(), ec);
  // Create with 0600 before writing any secret into it.
  fs::path tmp = path;
  tmp += ".tmp";
  {
    mode_t old = ::umask(077);
    std::ofstream out(tmp, std::ios::trunc);
    ::umask(old);
    if (!out) return fail(ErrorKind::kBadInput, "cannot write " + tmp.string());
    out << t << "\n";
    if (!out) return fail(ErrorKind::kBadInput, "error writing " + tmp.string());
  }
  ::chmod(tmp.c_str(), 0600);
  fs::rename(tmp, path, ec);
  if (ec)
    return fail(ErrorKind::kBadInput, "cannot replace " + path.string() + ": " + ec.message());
  return {};
}

}  // namespace ok::config
