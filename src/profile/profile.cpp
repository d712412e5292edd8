#include "profile/profile.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace ok::profile {

using nlohmann::json;

namespace {

std::optional<double> metric(const json& k, const char* key) {
  if (!k.is_object() || !k.contains(key) || !k[key].is_number()) return std::nullopt;
  const double v = k[key].get<double>();
  return std::isfinite(v) ? std::optional(v) : std::nullopt;
}

double or0(std::optional<double> v) {
  return v.value_or(0);
}

// A string member, or `fallback` when absent or of another type (a stored result is data).
std::string text(const json& j, const char* key, const std::string& fallback = "") {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                : fallback;
}

std::string pct(std::optional<double> v) {
  return v ? fmt::format("{:.0f}%", *v) : "n/a";
}

std::string short_name(const json& k) {
  std::string name = text(k, "name", "?");
  return name.size() > 80 ? name.substr(0, 77) + "..." : name;
}

// The top stall reason and its share, or empty.
std::pair<std::string, double> top_stall(const json& k) {
  if (!k.contains("top_stalls") || !k["top_stalls"].is_array() || k["top_stalls"].empty())
    return {"", 0};
  const json& s = k["top_stalls"][0];
  return {text(s, "reason"), or0(metric(s, "share"))};
}

// The occupancy limiter's resources, joined ("registers", "shared_memory"), or empty.
std::string limiter(const json& k) {
  if (!k.contains("occupancy_limiter") || !k["occupancy_limiter"].is_object()) return "";
  std::string out;
  for (const auto& by : k["occupancy_limiter"].value("by", json::array()))
    if (by.is_string()) out += (out.empty() ? "" : ", ") + by.get<std::string>();
  return out;
}

bool spilling(const json& k) {
  return k.contains("local_memory") && k["local_memory"].is_object() &&
         k["local_memory"].value("spilling", json(false)).is_boolean() &&
         k["local_memory"]["spilling"].get<bool>();
}

json numbers_of(const json& k, double share) {
  json n = {{"kernel", text(k, "name")}, {"share_of_profiled_time", share}};
  for (const char* key :
       {"duration_us", "dram_throughput_pct", "l2_throughput_pct", "sm_throughput_pct",
        "tensor_utilisation_pct", "achieved_occupancy_pct", "theoretical_occupancy_pct",
        "registers_per_thread", "shared_mem_per_block_bytes", "waves_per_sm", "l1_hit_rate_pct",
        "l2_hit_rate_pct"})
    if (auto v = metric(k, key)) n[key] = *v;
  if (auto l = limiter(k); !l.empty()) n["occupancy_limiter"] = l;
  if (auto [reason, s] = top_stall(k); !reason.empty()) n["top_stall"] = reason;
  n["spilling"] = spilling(k);
  if (k.contains("roofline") && k["roofline"].is_object())
    if (auto v = metric(k["roofline"], "intensity_flop_per_byte"))
      n["intensity_flop_per_byte"] = *v;
  return n;
}

// The suggestions for a latency-bound kernel, by its top stall reason.
void latency_moves(Bottleneck& b, const std::string& stall) {
  if (stall == "long_scoreboard") {
    b.suggestions.push_back(
        {"keep more loads in flight: vectorise (128-bit), unroll, prefetch "
         "the next tile while computing this one",
         "warps mostly wait on global memory (long scoreboard)"});
  } else if (stall == "barrier" || stall == "membar") {
    b.suggestions.push_back(
        {"cut block-wide synchronisation: warp shuffles for reductions, "
         "fewer __syncthreads / tl barriers per element",
         "warps mostly wait at barriers"});
  } else if (stall == "short_scoreboard" || stall == "mio_throttle" || stall == "lg_throttle") {
    b.suggestions.push_back(
        {"use fewer, wider shared-memory and local accesses; avoid bank "
         "conflicts",
         "warps wait on the memory input/output queues"});
  } else {
    b.suggestions.push_back(
        {"give each thread more independent work (ILP) and launch enough "
         "warps to hide latency",
         "neither memory nor compute is busy: latency is not hidden"});
  }
}

void occupancy_moves(Bottleneck& b, const json& k) {
  const std::string by = limiter(k);
  const double waves = metric(k, "waves_per_sm").value_or(1e9);
  if (waves < 1) {
    b.suggestions.push_back(
        {"launch more, smaller blocks (split rows or columns) so every SM gets work",
         fmt::format("the grid fills {:.2f} waves of the SMs", waves)});
  }
  if (by.find("registers") != std::string::npos) {
    b.suggestions.push_back(
        {"cut registers per thread: fewer live values, smaller per-thread "
         "tiles, __launch_bounds__ / num_warps",
         fmt::format("registers limit occupancy ({:.0f} per thread)",
                     or0(metric(k, "registers_per_thread")))});
  } else if (by.find("shared_memory") != std::string::npos) {
    b.suggestions.push_back({"use less shared memory per block: smaller tiles or fewer stages",
                             "shared memory limits occupancy"});
  } else {
    b.suggestions.push_back(
        {"raise parallelism: more programs or warps per block",
         by.empty() ? "few warps are active" : fmt::format("occupancy limited by {}", by)});
  }
}

}  // namespace

bool is_tier(const std::string& name) {
  return std::any_of(std::begin(kTiers), std::end(kTiers),
                     [&](const char* t) { return name == t; });
}

const json* dominant_kernel(const json& profile) {
  if (!profile.is_object() || !profile.contains("kernel_metrics") ||
      !profile["kernel_metrics"].is_array() || text(profile, "tier") != "deep")
    return nullptr;
  const json* best = nullptr;
  for (const auto& k : profile["kernel_metrics"])
    if (k.is_object() &&
        (!best || or0(metric(k, "duration_us")) > or0(metric(*best, "duration_us"))))
      best = &k;
  return best;
}

std::optional<Bottleneck> classify(const json& profile) {
  const json* kp = dominant_kernel(profile);
  if (!kp) return std::nullopt;
  const json& k = *kp;
  const auto dram = metric(k, "dram_throughput_pct"), l2 = metric(k, "l2_throughput_pct");
  const auto sm = metric(k, "sm_throughput_pct"), tensor = metric(k, "tensor_utilisation_pct");
  const auto occ = metric(k, "achieved_occupancy_pct");
  if (!dram && !sm) return std::nullopt;
  double total = 0;
  for (const auto& other : profile["kernel_metrics"]) total += or0(metric(other, "duration_us"));
  const double share = total > 0 ? or0(metric(k, "duration_us")) / total : 1;
  const double memory = std::max(or0(dram), or0(l2)), compute = std::max(or0(sm), or0(tensor));
  const auto [stall, stall_share] = top_stall(k);
  Bottleneck b;
  b.numbers = numbers_of(k, share);
  b.evidence.push_back(fmt::format(
      "ncu, kernel {} ({:.0f}% of the profiled time, {:.1f} us): DRAM {} and L2 {} of peak, SM "
      "{}, tensor {}, achieved occupancy {}",
      short_name(k), 100 * share, or0(metric(k, "duration_us")), pct(dram), pct(l2), pct(sm),
      pct(tensor), pct(occ)));
  if (!stall.empty())
    b.evidence.push_back(
        fmt::format("top warp stall: {} ({:.0f}% of stall cycles)", stall, 100 * stall_share));
  if (memory >= kBusyPct && memory >= compute) {
    b.kind = "memory";
    b.suggestions.push_back(
        {"move fewer bytes: fuse passes, keep reused data in shared memory or "
         "registers, narrower dtypes where the tolerance allows",
         fmt::format("memory runs at {:.0f}% of peak", memory)});
  } else if (compute >= kBusyPct) {
    b.kind = "compute";
    const json roof = k.value("roofline", json::object());
    if (or0(tensor) < 20 && or0(metric(roof, "intensity_flop_per_byte")) > 10)
      b.suggestions.push_back({"move the products onto tensor cores (tl.dot / mma / wgmma)",
                               "compute-bound with idle tensor cores"});
    b.suggestions.push_back(
        {"execute fewer instructions per output: reuse, cheaper math, "
         "strength reduction",
         fmt::format("SM at {:.0f}% of peak", compute)});
  } else if (occ && *occ < kLowOccupancyPct) {
    b.kind = "occupancy";
    occupancy_moves(b, k);
  } else {
    b.kind = "latency";
    latency_moves(b, stall);
  }
  if (spilling(k))
    b.suggestions.push_back({"remove local-memory spills: fewer live values or registers",
                             "the kernel spills registers to local memory", 0.5});
  return b;
}

void refine_diagnosis(json& d, const json& profile) {
  if (!profile.is_object() || !d.is_object()) return;
  if (!d.contains("evidence") || !d["evidence"].is_array()) d["evidence"] = json::array();
  for (const auto& f : profile.value("flags", json::array()))
    if (f.is_object())
      d["evidence"].push_back(fmt::format("{} profile not taken ({}): {}",
                                          text(profile, "requested_tier", "deeper"),
                                          text(f, "flag", "?"), text(f, "message")));
  const auto b = classify(profile);
  if (!b) return;
  json evidence = json::array();
  for (const auto& e : b->evidence) evidence.push_back(e);
  for (const auto& e : d["evidence"]) evidence.push_back(e);
  d["evidence"] = evidence;
  json metrics = b->numbers;
  metrics["tier"] = "deep";
  metrics["class"] = b->kind;
  d["metrics"] = metrics;
  const std::string before = text(d, "bottleneck");
  if (before == "correctness" || before == "launch") return;
  d["bottleneck"] = b->kind;
  const double gain = metric(d, "expected_gain").value_or(0.5);
  json suggestions = json::array();
  for (const auto& s : b->suggestions)
    suggestions.push_back(
        {{"action", s.action}, {"expected_gain", gain * s.weight}, {"rationale", s.rationale}});
  d["suggestions"] = suggestions;
}

std::string format_profile(const json& p) {
  if (!p.is_object()) return "";
  const std::string tier = text(p, "tier", "basic");
  std::string out;
  if (p.contains("requested_tier") || tier != "basic") {
    const json tool = p.value("tool", json::object());
    const std::string name = text(tool, "name");
    out += fmt::format("profile   {} tier{}", tier, name.empty() ? "" : " (" + name + ")");
    if (p.contains("seconds") && p["seconds"].is_number())
      out += fmt::format(", {:.1f} s{}", p["seconds"].get<double>(),
                         p.contains("cached") && p["cached"] == true ? " (cached)" : "");
    out += "\n";
  }
  for (const auto& f : p.value("flags", json::array()))
    if (f.is_object())
      out += fmt::format("  - profile {}: {}\n", text(f, "flag", "?"), text(f, "message"));
  if (const json* k = dominant_kernel(p))
    out += fmt::format("  top kernel {}: {:.1f} us, DRAM {}, SM {}, occupancy {}\n", short_name(*k),
                       or0(metric(*k, "duration_us")), pct(metric(*k, "dram_throughput_pct")),
                       pct(metric(*k, "sm_throughput_pct")),
                       pct(metric(*k, "achieved_occupancy_pct")));
  if (auto b = classify(p)) out += fmt::format("  bottleneck {}\n", b->kind);
  return out;
}

}  // namespace ok::profile
