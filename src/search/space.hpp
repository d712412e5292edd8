// The builtin generator's parameter space seen as named axes, so the world model can state
// hypotheses about it ("vectorise loads: vec=4", "more warps per program") and realise them as
// concrete template points.
//
// A point is the `params` object of one builtin candidate: {skill id: {axis: value, ...}, ...}
// (the extra "skill", "pattern" and "intent" keys of an attempt's params are ignored). Points keep
// the proposer's order, best prior first, so a point's index is its prior rank. Axes are every
// (skill, parameter) with at least two values among the points. Immutable after construction;
// thread-safe to read.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ok::search {

struct Axis {
  std::string key;  // "skill.param", e.g. "triton-row.num_warps"
  std::string skill, param;
  std::vector<nlohmann::json> values;  // in order of first appearance (the skill's prior order)
  std::string title;       // an optimisation intent in words: "change warps per program"
  std::string bottleneck;  // the critic's bottleneck class it addresses: memory, occupancy, ...
};

class TemplateSpace {
 public:
  TemplateSpace() = default;
  explicit TemplateSpace(const std::vector<nlohmann::json>& points);

  size_t size() const { return points_.size(); }
  bool empty() const { return points_.empty(); }
  const nlohmann::json& point(size_t i) const { return points_[i]; }
  const std::vector<Axis>& axes() const { return axes_; }
  std::optional<size_t> axis_index(const std::string& key) const;
  // The value of axis `a` at point `i` (null when the point lacks it).
  const nlohmann::json& value(size_t i, size_t a) const;
  // The index of the point equal to `params` on every axis (extra keys ignored).
  std::optional<size_t> find(const nlohmann::json& params) const;
  // Number of axes on which two points differ.
  int distance(size_t i, size_t j) const;
  // The untried point with axis `a` set to `v` that is closest to `from` (fewest other axes
  // changed; ties to the better prior). nullopt when no untried point has that value.
  std::optional<size_t> neighbour(size_t from, size_t a, const nlohmann::json& v,
                                  const std::set<size_t>& tried) const;
  // The best-prior untried point at least `min_distance` axes away from every point in `from`
  // (a change of direction); falls back to any untried point. nullopt when all were tried.
  std::optional<size_t> jump(const std::vector<size_t>& from, int min_distance,
                             const std::set<size_t>& tried) const;
  // " (num_warps=8, vec=4)": the axes of point i, for descriptions.
  std::string describe(size_t i) const;

 private:
  std::vector<nlohmann::json> points_;
  std::vector<Axis> axes_;
  std::vector<std::vector<nlohmann::json>> values_;  // [point][axis]
};

// The words and the bottleneck class for a template parameter ("vec" -> "vectorise loads",
// memory). Unknown names get a generic title.
void describe_axis(Axis& axis);

}  // namespace ok::search
