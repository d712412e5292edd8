// The offline builtin generator: graph IR (docs/graph-ir.md) in, KernelBench candidates out.
//
// propose() lowers the IR to primitive ops, partitions it into kernel groups along the data flow
// (vendor ops stay PyTorch calls; everything else is fused into pointwise or row kernels), and
// renders one complete candidate file per point of the skills' parameter spaces, best prior
// first. Skills (op expression tables, kernel templates, parameter spaces) are read from
// `skills_dir` (data/skills). Unsupported graphs are a normal outcome (supported=false with a
// reason), not an error; errors are reserved for malformed IR or unreadable skills.
// Stateless and thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace ok::generate {

struct GeneratedCandidate {
  std::string source;       // complete KernelBench-format candidate file (python)
  std::string pattern;      // e.g. "pointwise", "row:softmax", "reduce:sum", "vendor+pointwise"
  std::string skill;        // skill id(s) from data/skills, joined with '+'
  nlohmann::json params;    // template parameters chosen, per skill id
  std::string description;  // one line for humans
};

struct Proposal {
  bool supported = false;
  std::string reason;                          // why not, naming the op/shape when unsupported
  std::string pattern;                         // recognised pattern summary
  std::vector<GeneratedCandidate> candidates;  // the parameter space, best prior first
};

// backend: "cpu", "triton" or "cuda". reference_source is copied verbatim into each candidate.
// Deterministic for a given seed; the seed only orders candidates of equal prior.
// max_candidates <= 0 returns the whole admissible parameter space.
util::Result<Proposal> propose(const nlohmann::json& graph, const std::string& backend,
                               const std::string& reference_source,
                               const std::filesystem::path& skills_dir, uint64_t seed,
                               int max_candidates);

}  // namespace ok::generate
