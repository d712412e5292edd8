// Finding KernelBench problems on disk. A KernelBench directory holds level1..level4 folders of
// files named "<number>_<Name>.py". The directory comes from --kernelbench-dir, then
// $OPENKERNEL_KERNELBENCH_DIR, then the config file's kernelbench_dir. Stateless.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace ok::problems {

struct ProblemRef {
  int level = 0;
  int number = 0;
  std::string name;  // file stem without the number, e.g. "ReLU"
  std::filesystem::path path;
};

util::Result<std::filesystem::path> kernelbench_dir(const std::optional<std::string>& flag,
                                                    const std::optional<std::string>& configured);
util::Result<std::vector<ProblemRef>> list_level(const std::filesystem::path& dir, int level);
// The problems of `level` numbered in `numbers` (all of the level when empty), in that order.
// kBadInput naming every number the level lacks, or when the level has no problems.
util::Result<std::vector<ProblemRef>> select_problems(const std::filesystem::path& dir, int level,
                                                      const std::vector<int>& numbers);
util::Result<ProblemRef> find_problem(const std::filesystem::path& dir, int level, int number);

}  // namespace ok::problems
