// The cards (README.md with YAML front matter) `hub push` writes, and the kernel repository's
// contents drawn from the store.
//
// A dataset card lists `configs`: each config's data_files per split, so the `datasets` library
// finds the tables (docs/hub.md, "Cards"). Config names come from paths: a top-level file is its
// own config (its stem); processed/<name>[...] is config <name>; any other top-level folder is
// one config of every file of that extension beneath it (raw/**/*.parquet). metadata/ holds no
// data. A kernel repository has one folder per problem (kernel, report.json, report.md) and a
// card with a table of speedups and hardware.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hub/client.hpp"

namespace ok::hub {

struct DataConfig {
  std::string name;
  std::vector<std::string> paths;  // data_files of the train split (globs or files)
};

// The configs of a dataset's files (repository paths); files that are not tables are skipped.
std::vector<DataConfig> data_configs(const std::vector<std::string>& paths);
std::string dataset_card(const std::string& title, const std::string& description,
                         const std::vector<std::string>& paths);

struct KernelEntry {
  std::string problem, folder, session, backend, model, hardware;
  std::optional<int> level, number;
  std::optional<double> speedup, speedup_compile;
  std::filesystem::path kernel, report_json, report_md;  // report_md may be absent
};

// A problem's folder name in a kernel repository: its name with every character outside
// [A-Za-z0-9._-] replaced by '_'.
std::string problem_folder(const std::string& problem);

// The best correct kernel of each problem in the store (by speedup over eager), from the
// sessions' report.json; `problems` (names) filters when not empty. Sessions whose folder or
// kernel file is gone are skipped, with a note in `skipped`.
util::Result<std::vector<KernelEntry>> best_kernels(const std::filesystem::path& db,
                                                    const std::vector<std::string>& problems,
                                                    std::vector<std::string>& skipped);
// The commit of a kernel repository: each entry's folder and the card.
std::vector<CommitFile> kernel_files(const std::string& repo,
                                     const std::vector<KernelEntry>& entries);

}  // namespace ok::hub
