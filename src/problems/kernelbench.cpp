#include "problems/kernelbench.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>

#include "util/paths.hpp"

namespace ok::problems {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::fail;

util::Result<fs::path> kernelbench_dir(const std::optional<std::string>& flag,
                                       const std::optional<std::string>& configured) {
  std::optional<std::string> dir = flag;
  std::string source = "--kernelbench-dir";
  if (!dir) {
    dir = util::getenv_str("OPENKERNEL_KERNELBENCH_DIR");
    source = "OPENKERNEL_KERNELBENCH_DIR";
  }
  if (!dir && configured) {
    dir = configured;
    source = "kernelbench_dir in the config file";
  }
  if (!dir)
    return fail(ErrorKind::kUsage,
                "no KernelBench directory: pass --kernelbench-dir DIR, set "
                "OPENKERNEL_KERNELBENCH_DIR, or add kernelbench_dir to the config file");
  std::error_code ec;
  if (!fs::is_directory(*dir, ec))
    return fail(ErrorKind::kBadInput,
                fmt::format("the KernelBench directory {} (from {}) does not exist", *dir, source));
  if (!fs::is_directory(fs::path(*dir) / "level1", ec))
    return fail(ErrorKind::kBadInput,
                fmt::format("{} (from {}) is not a KernelBench directory: it has no level1 folder",
                            *dir, source));
  return fs::path(*dir);
}

util::Result<std::vector<ProblemRef>> list_level(const fs::path& dir, int level) {
  fs::path ldir = dir / fmt::format("level{}", level);
  std::error_code ec;
  if (!fs::is_directory(ldir, ec))
    return fail(ErrorKind::kBadInput,
                fmt::format("KernelBench level {} not found (no folder {})", level, ldir.string()));
  std::vector<ProblemRef> out;
  for (const auto& entry : fs::directory_iterator(ldir, ec)) {
    if (entry.path().extension() != ".py") continue;
    std::string stem = entry.path().stem().string();
    auto us = stem.find('_');
    if (us == std::string::npos) continue;
    int n = 0;
    auto [p, e] = std::from_chars(stem.data(), stem.data() + us, n);
    if (e != std::errc() || p != stem.data() + us) continue;
    out.push_back({level, n, stem.substr(us + 1), entry.path()});
  }
  std::sort(out.begin(), out.end(),
            [](const ProblemRef& a, const ProblemRef& b) { return a.number < b.number; });
  return out;
}

util::Result<ProblemRef> find_problem(const fs::path& dir, int level, int number) {
  auto all = list_level(dir, level);
  if (!all) return std::unexpected(all.error());
  for (const auto& p : *all)
    if (p.number == number) return p;
  return fail(ErrorKind::kBadInput,
              fmt::format("KernelBench level {} has no problem {} ({} problems, numbered {}-{})",
                          level, number, all->size(), all->empty() ? 0 : all->front().number,
                          all->empty() ? 0 : all->back().number));
}

util::Result<std::vector<ProblemRef>> select_problems(const std::filesystem::path& dir, int level,
                                                      const std::vector<int>& numbers) {
  auto all = list_level(dir, level);
  if (!all) return std::unexpected(all.error());
  if (all->empty())
    return util::fail(util::ErrorKind::kBadInput,
                      fmt::format("level {} in {} has no problems", level, dir.string()));
  if (numbers.empty()) return all;
  std::vector<ProblemRef> chosen;
  std::string missing;
  for (int n : numbers) {
    auto it = std::find_if(all->begin(), all->end(), [n](const auto& p) { return p.number == n; });
    if (it != all->end())
      chosen.push_back(*it);
    else
      missing += (missing.empty() ? "" : ", ") + std::to_string(n);
  }
  if (!missing.empty())
    return util::fail(util::ErrorKind::kBadInput, fmt::format("level {} in {} has no problem {}",
                                                              level, dir.string(), missing));
  return chosen;
}

}  // namespace ok::problems
