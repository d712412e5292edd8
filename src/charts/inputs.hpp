// Where the charts' runs come from: sweep results TSVs (docs/tsv.md) and stores (docs/store.md).
//
// Each TSV is one run. A store gives the per-attempt history of the TSV rows whose session it
// holds (found through the sweep's task folder, `<TSV without extension>/L<level>_<nnn>_<name>/
// session`, else by level, problem, backend, model and attempt count, the newest session
// winning); its sessions that no TSV row claims form one more run, labelled with the store's file
// name. A problem's
// device is, in order: the TSV's `device` column, the `device` of the report.json beside the
// problem (the task folder, or the session's --out), a store's `cpu`, `Sources::hardware`, else
// what the store recorded (`cuda:0`). Stores are opened with Store::open (which brings an older
// store to the current schema, as every command does) and only read. Stateless; thread-safe.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "charts/data.hpp"
#include "util/error.hpp"

namespace ok::charts {

struct Sources {
  std::vector<std::filesystem::path> tsvs;
  std::vector<std::filesystem::path> dbs;
  std::filesystem::path baselines;  // published.json; empty: no published figures
  std::string hardware;             // the device of problems that recorded no device name
};

// Errors are kBadInput and name the file: a missing or malformed TSV, a store that cannot be
// opened or read, a malformed baselines file, no runs at all.
util::Result<Inputs> load_inputs(const Sources& sources);

// The store's sessions as problems (one per session, oldest first), with their attempts; level and
// problem from the session's options (a reference outside KernelBench: level 0, numbered 1, 2, ...
// in session order).
util::Result<std::vector<Problem>> store_problems(const std::filesystem::path& db,
                                                  const std::string& hardware);

}  // namespace ok::charts
