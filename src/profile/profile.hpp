// Profiling tiers: what the engine makes of the evidence the worker's profilers gather
// (docs/profiling.md).
//
// Where the tiers live. The worker runs them (python/openkernel_worker):
//   basic   the torch profiler's kernel and op tables of every evaluation (integrity.py,
//           verdicts.judge_profile); always on, nothing extra runs.
//   proton  one forward under Triton's Proton (profiling.py, proton_report.py): per-kernel
//           device times, and FLOPs/bytes where kernels declare them.
//   deep    one forward under Nsight Compute (profiling.py, profile_run.py, ncu_report.py): the
//           curated metric set per kernel, parsed from `ncu --import REPORT --csv --page raw`.
// ncu must start the process it profiles, so proton and deep run a profiling process of their
// own after the evaluation (`python -m openkernel_worker.profile_forward`), in the candidate's
// sandbox profile with the profiler's installation bound read-only, time-boxed by the
// evaluation's timeout_s (the process group is killed at the deadline).
//
// Contract. The evaluate request carries `profile` (basic | proton | deep; sent only when not
// basic; `openkernel evaluate --profile`). The result's `profile` object keeps the basic keys and
// adds `tier` (the tier that ran), and above basic `requested_tier`, `kernel_metrics` (one object
// per kernel, docs/profiling.md), `tool`, `flags` ([{flag, message}]: why a tier did not run or
// fell back; deep falls back to proton, then basic; never a failed evaluation), `seconds` (what
// the tier cost), `cached` and, for deep, `report_file` (the kept .ncu-rep). The worker caches a
// tier's result by the candidate's and reference's source hashes, overrides, GPU, tool version
// and sections.
//
// This library reads that object: the bottleneck class the heuristic critic uses (memory,
// compute, latency, occupancy, with the numbers it used) and the report's profile lines. Pure
// functions over JSON; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ok::profile {

// The tiers, cheapest first, as the request and the CLI spell them.
inline constexpr const char* kTiers[] = {"basic", "proton", "deep"};
bool is_tier(const std::string& name);

// Share of peak above which a unit counts as the limiter (ncu's own Speed-of-Light guidance).
inline constexpr double kBusyPct = 60;
// Achieved occupancy below which, with no unit busy, the kernel is occupancy-limited.
inline constexpr double kLowOccupancyPct = 40;

struct Suggestion {
  std::string action, rationale;
  double weight = 1;  // share of the diagnosis' expected gain
};

// The bottleneck of a profile's dominant kernel.
struct Bottleneck {
  std::string kind;  // memory, compute, latency, occupancy
  std::vector<std::string> evidence;
  std::vector<Suggestion> suggestions;
  nlohmann::json numbers;  // the metrics the class was read from, with the kernel's name
};

// The dominant kernel (longest duration) of a deep profile's `kernel_metrics`, or null.
const nlohmann::json* dominant_kernel(const nlohmann::json& profile);

// The class of a deep profile's dominant kernel; nullopt when the profile has no deep metrics
// (basic or proton tier, a limit hit, or the throughput figures missing).
std::optional<Bottleneck> classify(const nlohmann::json& profile);

// Refines a heuristic diagnosis (docs/optimize.md's schema) with the profile's evidence: with a
// deep profile the bottleneck, suggestions and a `metrics` object come from classify() (a
// correctness or launch diagnosis keeps its class and only gains evidence); a profile's flags
// become evidence lines. Leaves `diagnosis` alone when the profile is not an object.
void refine_diagnosis(nlohmann::json& diagnosis, const nlohmann::json& profile);

// The report's lines about the tier that ran (empty for a basic profile without flags).
std::string format_profile(const nlohmann::json& profile);

}  // namespace ok::profile
