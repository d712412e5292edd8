#include "charts/data.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "score/metrics.hpp"

namespace ok::charts {

using nlohmann::json;
using score::Baseline;

namespace {

constexpr int kVersion = 1;
constexpr size_t kFast1 = 1;  // kThresholds[1] == "1.0"

json opt(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

std::vector<score::Row> rows_of(const std::vector<Problem>& problems) {
  std::vector<score::Row> rows;
  rows.reserve(problems.size());
  for (const auto& p : problems) rows.push_back(p.row);
  return rows;
}

std::vector<Problem> with_attempts(const std::vector<Problem>& problems) {
  std::vector<Problem> out;
  for (const auto& p : problems)
    if (!p.attempts.empty()) out.push_back(p);
  return out;
}

int max_attempts(const std::vector<Problem>& problems) {
  size_t k = 0;
  for (const auto& p : problems) k = std::max(k, p.attempts.size());
  return static_cast<int>(k);
}

std::optional<double> fast_p_of(const score::Metrics& m, Baseline b, size_t i) {
  const auto& bm = m.of(b);
  return bm.fast_p ? std::optional((*bm.fast_p)[i]) : std::nullopt;
}

// The devices of a run's problems, sorted, joined ("" when none recorded).
std::string devices_of(const Run& run) {
  std::set<std::string> names;
  for (const auto& p : run.problems)
    if (!p.device.empty()) names.insert(p.device);
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

json axis(const std::string& label, const std::string& scale) {
  return {{"label", label}, {"scale", scale}};
}

json chart(const std::string& id, const std::string& title, const std::string& kind) {
  return {{"id", id}, {"title", title}, {"kind", kind}, {"notes", json::array()}};
}

// The label of a published figure's problem set and metric, which our runs are measured on too.
std::string figure_category(const score::PublishedFigure& f) {
  std::string s = fmt::format("fast_{} vs {}", f.p, f.baseline);
  if (f.level) return s + fmt::format(", level {}", *f.level);
  std::string levels;
  for (int l : f.levels) levels += (levels.empty() ? "" : ",") + std::to_string(l);
  return levels.empty() ? s : s + ", levels " + levels;
}

json fast_p_vs_published(const Inputs& in) {
  json c = chart("fast_p_vs_published", "fast_p beside published systems", "bars");
  c["x"] = axis("metric and problem set (as published)", "category");
  c["y"] = axis("fast_p (fraction of all problems)", "linear");
  c["y"]["range"] = {0, 1};
  std::vector<std::string> categories;
  std::map<std::string, json> series;  // by name, published systems first
  std::vector<std::string> order;
  auto add = [&](const std::string& name, const std::string& hw, bool ours) -> json& {
    if (!series.contains(name)) {
      series[name] = {{"name", name}, {"hardware", hw}, {"ours", ours}, {"values", json::object()}};
      order.push_back(name);
    }
    return series[name];
  };
  for (const auto& f : in.published) {
    if (f.metric != "fast_p" || f.baseline.empty()) continue;
    bool any_ours = false;
    for (const auto& run : in.runs) {
      auto cmp = score::compare(rows_of(run.problems), {f});
      if (cmp.empty() || !cmp[0].ours) continue;
      std::string cat = figure_category(f);
      any_ours = true;
      json& s = add(run.label, devices_of(run), true);
      s["values"][cat] = {{"value", *cmp[0].ours}, {"n", cmp[0].our_n}};
    }
    if (!any_ours) continue;  // no run measures this metric on these levels
    std::string cat = figure_category(f);
    if (std::ranges::find(categories, cat) == categories.end()) categories.push_back(cat);
    json& s = add(f.system, f.hardware, false);
    s["values"][cat] = {{"value", f.value},
                        {"bound", f.bound.empty() ? json(nullptr) : json(f.bound)},
                        {"as_published", f.as_published}};
  }
  c["categories"] = categories;
  c["series"] = json::array();
  std::stable_partition(order.begin(), order.end(),
                        [&](const std::string& n) { return !series[n]["ours"].get<bool>(); });
  for (const auto& name : order) {
    json s = series[name];
    json values = json::array(), bounds = json::array(), n = json::array();
    for (const auto& cat : categories) {
      const json& v = s["values"].contains(cat) ? s["values"][cat] : json(nullptr);
      values.push_back(v.is_object() ? v["value"] : json(nullptr));
      bounds.push_back(v.is_object() ? v.value("bound", json(nullptr)) : json(nullptr));
      n.push_back(v.is_object() ? v.value("n", json(nullptr)) : json(nullptr));
    }
    s["values"] = values;
    s["bounds"] = bounds;
    s["n"] = n;
    c["series"].push_back(s);
  }
  c["notes"].push_back(
      "Published figures keep their own hardware, problem set and baseline; ours are computed "
      "over our problems of the figure's levels (n), so a bar is comparable only as far as "
      "those match. A bound 'below' is an upper bound.");
  return c;
}

// Quartiles by linear interpolation between order statistics (numpy's default).
double quantile(const std::vector<double>& sorted, double q) {
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

json speedup_distribution(const Inputs& in) {
  json c = chart("speedup_distribution", "Speedup of the correct kernels", "box");
  c["x"] = axis("run and baseline", "category");
  c["y"] = axis("speedup (x, log scale)", "log");
  c["series"] = json::array();
  for (const auto& run : in.runs) {
    for (Baseline b : score::kBaselines) {
      std::vector<double> v;
      for (const auto& p : run.problems) {
        const auto& s = b == Baseline::kEager ? p.row.speedup_eager : p.row.speedup_compile;
        if (p.row.correct && s) v.push_back(*s);
      }
      if (v.empty()) continue;
      std::ranges::sort(v);
      c["series"].push_back({{"name", fmt::format("{} vs {}", run.label, score::baseline_name(b))},
                             {"run", run.label},
                             {"baseline", score::baseline_name(b)},
                             {"values", v},
                             {"stats",
                              {{"n", v.size()},
                               {"min", v.front()},
                               {"q1", quantile(v, 0.25)},
                               {"median", quantile(v, 0.5)},
                               {"q3", quantile(v, 0.75)},
                               {"max", v.back()}}}});
    }
  }
  c["notes"].push_back(
      "Correct problems with a measured speedup; quartiles interpolate linearly between order "
      "statistics.");
  return c;
}

json scaling(const Inputs& in) {
  json c = chart("scaling", "fast_p against the attempt budget", "lines");
  c["x"] = axis("attempt budget k (attempts per problem)", "linear");
  c["y"] = axis("fast_p vs eager (fraction of the problems)", "linear");
  c["y"]["range"] = {0, 1};
  c["series"] = json::array();
  for (const auto& run : in.runs) {
    auto problems = with_attempts(run.problems);
    if (problems.empty()) continue;
    for (size_t i : {size_t{0}, kFast1, size_t{2}}) {  // fast_0.0, fast_1.0, fast_1.2
      json x = json::array(), y = json::array();
      for (int k = 1; k <= max_attempts(problems); ++k) {
        x.push_back(k);
        y.push_back(opt(fast_p_of(score::compute(rows_after(problems, k)), Baseline::kEager, i)));
      }
      c["series"].push_back({{"name", fmt::format("{} fast_{}", run.label, score::kThresholds[i])},
                             {"run", run.label},
                             {"p", score::kThresholds[i]},
                             {"n", problems.size()},
                             {"x", x},
                             {"y", y}});
    }
  }
  c["notes"].push_back(
      "fast_p (openkernel score's definition) of the rows as they stood after k attempts per "
      "problem: the best correct speedup among a session's first k attempts, in the session's "
      "order. Only problems whose attempts a store recorded count (n).");
  return c;
}

// Marks the points no other point beats: lower or equal x and higher or equal y, one of them
// strictly. Points are [x, y, label].
json frontier(std::vector<std::tuple<double, double, std::string>> pts) {
  std::ranges::sort(pts, [](const auto& a, const auto& b) {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b)
                                            : std::get<1>(a) > std::get<1>(b);
  });
  json x = json::array(), y = json::array(), text = json::array();
  double best = -INFINITY;
  for (const auto& [px, py, label] : pts) {
    if (py <= best) continue;
    best = py;
    x.push_back(px);
    y.push_back(py);
    text.push_back(label);
  }
  return {{"name", "frontier"}, {"frontier", true}, {"x", x}, {"y", y}, {"text", text}};
}

// Speedup (geomean over all problems, fallback 1.0) against what was spent up to each budget k;
// `spend` gives one attempt's spending. Runs without attempts give one point from their rows
// when `rows_spend` gives a value.
json spend_frontier(const Inputs& in, json c, double (*spend)(const Attempt&),
                    std::optional<double> (*rows_spend)(const std::vector<Problem>&)) {
  c["y"] = axis("geomean speedup vs eager (all problems, fallback 1.0)", "linear");
  c["series"] = json::array();
  std::vector<std::tuple<double, double, std::string>> all;
  for (const auto& run : in.runs) {
    json x = json::array(), y = json::array(), text = json::array();
    auto add = [&](double px, const std::vector<score::Row>& rows, const std::string& label) {
      auto g = score::compute(rows).eager.geomean_speedup_fallback;
      if (!g) return;
      x.push_back(px);
      y.push_back(*g);
      text.push_back(label);
      all.emplace_back(px, *g, run.label + " " + label);
    };
    auto problems = with_attempts(run.problems);
    if (!problems.empty()) {
      for (int k = 1; k <= max_attempts(problems); ++k) {
        double total = 0;
        for (const auto& p : problems)
          for (size_t i = 0; i < p.attempts.size() && static_cast<int>(i) < k; ++i)
            total += spend(p.attempts[i]);
        add(total, rows_after(problems, k), fmt::format("k={}", k));
      }
    } else if (auto total = rows_spend(run.problems)) {
      add(*total, rows_of(run.problems), "final");
    }
    if (!x.empty())
      c["series"].push_back({{"name", run.label}, {"x", x}, {"y", y}, {"text", text}});
  }
  c["series"].push_back(frontier(std::move(all)));
  return c;
}

json cost_frontier(const Inputs& in) {
  json c = chart("cost_frontier", "Speedup against LLM spending", "scatter");
  c["x"] = axis("LLM spending (USD, all problems)", "linear");
  c = spend_frontier(
      in, c, [](const Attempt& a) { return a.cost_usd; },
      [](const std::vector<Problem>& ps) -> std::optional<double> {
        double total = 0;
        for (const auto& p : ps) total += p.row.cost_usd.value_or(0);
        return total;
      });
  c["notes"].push_back(
      "One point per attempt budget k (runs with recorded attempts) or per run (a TSV alone: its "
      "cost_usd total). The builtin generator spends nothing. frontier: no other point is "
      "cheaper and faster.");
  return c;
}

json time_frontier(const Inputs& in) {
  json c = chart("time_frontier", "Speedup against search time", "scatter");
  c["x"] = axis("attempts' wall time (s, all problems)", "linear");
  c = spend_frontier(
      in, c, [](const Attempt& a) { return a.wall_s; },
      [](const std::vector<Problem>&) -> std::optional<double> { return std::nullopt; });
  c["notes"].push_back(
      "Wall time of the first k attempts of every problem, summed (runs with recorded attempts "
      "only). frontier: no other point is quicker and faster.");
  return c;
}

std::string problem_key(const score::Row& r) {
  return r.level > 0 ? fmt::format("L{} {:>3} {}", r.level, r.problem_id, r.name) : r.name;
}

json problem_heatmap(const Inputs& in) {
  json c = chart("problem_heatmap", "Speedup vs eager per problem and run", "heatmap");
  c["x"] = axis("run", "category");
  c["y"] = axis("problem", "category");
  c["z_label"] = "speedup vs eager (correct kernels; log scale)";
  std::map<std::tuple<int, int, std::string>, std::string> problems;  // sorted by level, id
  for (const auto& run : in.runs)
    for (const auto& p : run.problems)
      problems[{p.row.level, p.row.level > 0 ? p.row.problem_id : 0, p.row.name}] =
          problem_key(p.row);
  json xs = json::array(), ys = json::array(), z = json::array(), text = json::array();
  for (const auto& run : in.runs) xs.push_back(run.label);
  for (const auto& [key, name] : problems) {
    ys.push_back(name);
    json zr = json::array(), tr = json::array();
    for (const auto& run : in.runs) {
      auto it = std::ranges::find_if(run.problems,
                                     [&](const Problem& p) { return problem_key(p.row) == name; });
      if (it == run.problems.end()) {
        zr.push_back(nullptr);
        tr.push_back("");
        continue;
      }
      zr.push_back(it->row.correct ? opt(it->row.speedup_eager) : json(nullptr));
      tr.push_back(it->row.verdict);
    }
    z.push_back(zr);
    text.push_back(tr);
  }
  c["x"]["categories"] = xs;
  c["y"]["categories"] = ys;
  c["z"] = z;
  c["text"] = text;
  c["notes"].push_back("Empty: the run has no correct kernel for the problem, or lacks it.");
  return c;
}

json hardware(const Inputs& in) {
  json c = chart("hardware", "fast_1.0 per device and backend", "bars");
  c["x"] = axis("device", "category");
  c["y"] = axis("fast_1.0 vs eager (fraction of the problems)", "linear");
  c["y"]["range"] = {0, 1};
  std::map<std::string, std::map<std::string, std::vector<score::Row>>> cells;
  std::set<std::string> backends;
  for (const auto& run : in.runs)
    for (const auto& p : run.problems) {
      cells[p.device.empty() ? "unknown device" : p.device][p.row.backend].push_back(p.row);
      backends.insert(p.row.backend);
    }
  json categories = json::array();
  for (const auto& [device, _] : cells) categories.push_back(device);
  c["categories"] = categories;
  c["series"] = json::array();
  for (const auto& backend : backends) {
    json values = json::array(), n = json::array(), geomean = json::array();
    for (const auto& [device, by_backend] : cells) {
      auto it = by_backend.find(backend);
      if (it == by_backend.end()) {
        values.push_back(nullptr);
        n.push_back(nullptr);
        geomean.push_back(nullptr);
        continue;
      }
      auto m = score::compute(it->second);
      values.push_back(opt(fast_p_of(m, Baseline::kEager, kFast1)));
      n.push_back(m.n);
      geomean.push_back(opt(m.eager.geomean_speedup));
    }
    c["series"].push_back(
        {{"name", backend}, {"values", values}, {"n", n}, {"geomean_speedup", geomean}});
  }
  c["notes"].push_back(
      "Every run's problems on a device and backend pooled (n rows); a problem measured by two "
      "runs counts twice.");
  return c;
}

}  // namespace

std::vector<score::Row> rows_after(const std::vector<Problem>& problems, int k) {
  std::vector<score::Row> rows;
  for (const auto& p : problems) {
    if (p.attempts.empty()) continue;
    score::Row r = p.row;
    r.correct = false;
    r.runtime_us.reset();
    r.speedup_eager.reset();
    r.speedup_compile.reset();
    size_t seen = std::min(p.attempts.size(), static_cast<size_t>(std::max(k, 0)));
    r.verdict = seen ? p.attempts[seen - 1].verdict : "no_attempts";
    for (size_t i = 0; i < seen; ++i) {
      const auto& a = p.attempts[i];
      // As the session picks its best (optimize's Loop::consider_best): correct with a speedup.
      if (!a.correct || !a.speedup) continue;
      if (r.speedup_eager && *a.speedup <= *r.speedup_eager) continue;
      r.correct = true;
      r.verdict = a.verdict;
      r.speedup_eager = a.speedup;
      r.runtime_us = a.runtime_us;
      r.speedup_compile.reset();
      if (r.compile_us && a.runtime_us && *a.runtime_us > 0)
        r.speedup_compile = *r.compile_us / *a.runtime_us;
    }
    r.attempts = static_cast<int>(seen);
    rows.push_back(std::move(r));
  }
  return rows;
}

json chart_data(const Inputs& in) {
  json runs = json::array();
  for (const auto& run : in.runs)
    runs.push_back({{"label", run.label},
                    {"source", run.source},
                    {"problems", run.problems.size()},
                    {"with_attempts", with_attempts(run.problems).size()},
                    {"devices", devices_of(run)}});
  return {{"version", kVersion},
          {"runs", runs},
          {"charts",
           {fast_p_vs_published(in), speedup_distribution(in), scaling(in), cost_frontier(in),
            time_frontier(in), problem_heatmap(in), hardware(in)}}};
}

}  // namespace ok::charts
