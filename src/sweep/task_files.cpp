#include "sweep/task_files.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include "util/paths.hpp"
#include "util/strings.hpp"

namespace ok::sweep::files {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& p) {
  auto r = util::read_file(p);
  return r ? util::trim(*r) : std::string();
}

json read_json(const fs::path& p) {
  auto r = util::read_file(p);
  if (!r) return nullptr;
  json j = json::parse(*r, nullptr, false);
  return j.is_discarded() ? json(nullptr) : j;
}

util::Result<void> write_atomic(const fs::path& p, std::string_view content) {
  fs::path tmp = p;
  tmp += fmt::format(".tmp{}", ::getpid());
  if (auto w = util::write_file(tmp, content); !w) return w;
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec)
    return util::fail(util::ErrorKind::kBadInput,
                      fmt::format("cannot write {}: {}", p.string(), ec.message()));
  return {};
}

std::string log_tail(const fs::path& p, size_t max) {
  auto r = util::read_file(p);
  if (!r) return "";
  std::string s = util::trim(*r);
  if (s.size() > max) s = "..." + s.substr(s.size() - max);
  return s;
}

std::string report_error(const Task& t) {
  json report = read_json(t.dir / kReport);
  if (report.is_object() && report.contains("error") && report["error"].is_string())
    return report["error"].get<std::string>();
  return "";
}

void record_failure(const Options& o, const Task& t, const std::string& why) {
  json e = {{"verdict", "error"},   {"level", t.level},     {"problem", t.number},
            {"name", t.name},       {"backend", o.backend}, {"model", o.model},
            {"session", t.session}, {"message", why},       {"log_tail", log_tail(t.dir / kLog)}};
  (void)write_atomic(t.dir / kError, e.dump(2) + "\n");
}

}  // namespace ok::sweep::files
