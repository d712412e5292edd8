#include "search/space.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>

namespace ok::search {

using nlohmann::json;

namespace {

const json kNull = nullptr;

// Keys of an attempt's params that are not template parameters.
bool is_meta(const std::string& key) {
  return key == "skill" || key == "pattern" || key == "intent";
}

}  // namespace

void describe_axis(Axis& a) {
  // The template parameters of data/skills/*.json, as the hypotheses a kernel engineer would state.
  static const std::map<std::string, std::pair<const char*, const char*>> kKnown = {
      {"BLOCK", {"change the block size (elements per program)", "memory"}},
      {"BLOCK_R", {"change the reduction tile (0: the whole row in one tile)", "memory"}},
      {"BLOCK_J", {"change the tile across the kept axis", "occupancy"}},
      {"num_warps", {"change the warps per program", "occupancy"}},
      {"mode", {"one program per row in one tile vs a looped reduction", "memory"}},
      {"vec", {"vectorise loads and stores", "memory"}},
      {"TR", {"change the threads along the reduced axis", "occupancy"}},
      {"TJ", {"change the threads along the kept axis", "occupancy"}},
      {"threads", {"change the threads per block", "occupancy"}},
      {"fast_math", {"use fast-math transcendentals", "compute"}},
      {"schedule", {"change the OpenMP schedule", "launch"}},
      {"tile", {"change the column tile of the row loop", "memory"}},
      {"BLOCK_M", {"change the GEMM tile's rows", "occupancy"}},
      {"BLOCK_N", {"change the GEMM tile's columns", "occupancy"}},
      {"BLOCK_K", {"change the GEMM's K slice per step", "memory"}},
      {"GROUP_M", {"change the grouped tile order (L2 reuse of B)", "memory"}},
      {"SPLIT_K", {"split K across programs", "occupancy"}},
      {"num_stages", {"change the software-pipelining depth", "memory"}},
      {"BM", {"change the GEMM tile's rows", "occupancy"}},
      {"BN", {"change the GEMM tile's columns", "occupancy"}},
      {"BK", {"change the GEMM's K slice per step", "memory"}},
      {"TM", {"change the rows of each thread's register tile", "compute"}},
      {"TN", {"change the columns of each thread's register tile", "compute"}},
      {"order", {"change the GEMM loop order", "memory"}},
      {"unroll", {"change the K loop's unroll factor", "compute"}},
  };
  auto it = kKnown.find(a.param);
  if (it != kKnown.end()) {
    a.title = it->second.first;
    a.bottleneck = it->second.second;
  } else {
    a.title = "change " + a.param;
    a.bottleneck = "";
  }
}

TemplateSpace::TemplateSpace(const std::vector<json>& points) : points_(points) {
  // Axes in order of first appearance; values in order of first appearance (best prior first).
  std::map<std::string, size_t> index;
  for (const auto& p : points_) {
    if (!p.is_object()) continue;
    for (const auto& [skill, params] : p.items()) {
      if (is_meta(skill) || !params.is_object()) continue;
      for (const auto& [name, v] : params.items()) {
        std::string key = skill + "." + name;
        auto [it, fresh] = index.emplace(key, axes_.size());
        if (fresh) {
          Axis a;
          a.key = key;
          a.skill = skill;
          a.param = name;
          describe_axis(a);
          axes_.push_back(std::move(a));
        }
        auto& vals = axes_[it->second].values;
        if (std::find(vals.begin(), vals.end(), v) == vals.end()) vals.push_back(v);
      }
    }
  }
  // Parameters with one value are not axes to search.
  std::erase_if(axes_, [](const Axis& a) { return a.values.size() < 2; });
  values_.resize(points_.size());
  for (size_t i = 0; i < points_.size(); ++i) {
    for (const auto& a : axes_) {
      const json& p = points_[i];
      if (p.contains(a.skill) && p[a.skill].is_object() && p[a.skill].contains(a.param))
        values_[i].push_back(p[a.skill][a.param]);
      else
        values_[i].push_back(nullptr);
    }
  }
}

std::optional<size_t> TemplateSpace::axis_index(const std::string& key) const {
  for (size_t a = 0; a < axes_.size(); ++a)
    if (axes_[a].key == key) return a;
  return std::nullopt;
}

const json& TemplateSpace::value(size_t i, size_t a) const {
  if (i >= values_.size() || a >= values_[i].size()) return kNull;
  return values_[i][a];
}

std::optional<size_t> TemplateSpace::find(const json& params) const {
  for (size_t i = 0; i < points_.size(); ++i) {
    bool same = true;
    for (size_t a = 0; a < axes_.size() && same; ++a) {
      const Axis& ax = axes_[a];
      json v = params.contains(ax.skill) && params[ax.skill].is_object() &&
                       params[ax.skill].contains(ax.param)
                   ? params[ax.skill][ax.param]
                   : json(nullptr);
      same = v == values_[i][a];
    }
    if (same) return i;
  }
  return std::nullopt;
}

int TemplateSpace::distance(size_t i, size_t j) const {
  int d = 0;
  for (size_t a = 0; a < axes_.size(); ++a) d += values_[i][a] != values_[j][a];
  return d;
}

std::optional<size_t> TemplateSpace::neighbour(size_t from, size_t a, const json& v,
                                               const std::set<size_t>& tried) const {
  std::optional<size_t> best;
  int best_d = 0;
  for (size_t i = 0; i < points_.size(); ++i) {
    if (tried.count(i) || values_[i][a] != v) continue;
    int d = distance(from, i);
    if (!best || d < best_d) {
      best = i;
      best_d = d;
    }
  }
  return best;
}

std::optional<size_t> TemplateSpace::jump(const std::vector<size_t>& from, int min_distance,
                                          const std::set<size_t>& tried) const {
  std::optional<size_t> fallback;
  for (size_t i = 0; i < points_.size(); ++i) {
    if (tried.count(i)) continue;
    if (!fallback) fallback = i;
    bool far = std::all_of(from.begin(), from.end(),
                           [&](size_t f) { return distance(f, i) >= min_distance; });
    if (far) return i;
  }
  return fallback;
}

std::string TemplateSpace::describe(size_t i) const {
  std::string out;
  for (size_t a = 0; a < axes_.size(); ++a) {
    const json& v = values_[i][a];
    if (v.is_null()) continue;
    out += (out.empty() ? "" : ", ") + axes_[a].param + "=" +
           (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out.empty() ? "" : " (" + out + ")";
}

}  // namespace ok::search
