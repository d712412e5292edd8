#include "score/report.hpp"

#include <fmt/core.h>

#include <charconv>
#include <set>

#include "util/paths.hpp"

namespace ok::score {

using nlohmann::json;
using util::ErrorKind;
using util::fail;

namespace {

json opt(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

json metrics_json(const Metrics& m) {
  json j = {{"n", m.n}, {"correct", m.correct}, {"correct_rate", m.correct_rate}};
  for (Baseline b : kBaselines) {
    const auto& bm = m.of(b);
    auto name = std::string(baseline_name(b));
    auto by_threshold = [](const std::optional<std::array<double, 5>>& v) {
      if (!v) return json(nullptr);
      json fp = json::object();
      for (size_t i = 0; i < kThresholds.size(); ++i) fp[std::string(kThresholds[i])] = (*v)[i];
      return fp;
    };
    j["fast_p"][name] = by_threshold(bm.fast_p);
    j["fast_p_significant"][name] = by_threshold(bm.fast_p_significant);
    j["geomean_speedup"][name] = opt(bm.geomean_speedup);
    j["geomean_speedup_fallback"][name] = opt(bm.geomean_speedup_fallback);
  }
  return j;
}

json interval_json(const std::optional<Interval>& i) {
  return i ? json::array({i->lo, i->hi}) : json(nullptr);
}

std::string fmt_opt(const std::optional<double>& v, const char* spec_suffix = "") {
  return v ? fmt::format("{:.3f}{}", *v, spec_suffix) : "-";
}

std::string fmt_ci(const std::optional<Interval>& i) {
  return i ? fmt::format("[{:.3f}, {:.3f}]", i->lo, i->hi) : "";
}

double parse_p(std::string_view p) {
  double v = 0;
  std::from_chars(p.data(), p.data() + p.size(), v);
  return v;
}

std::string levels_text(const std::vector<int>& levels) {
  std::string s;
  for (int l : levels) s += (s.empty() ? "" : ",") + std::to_string(l);
  return s.empty() ? "-" : s;
}

std::string metric_label(const PublishedFigure& f) {
  std::string s = f.metric == "fast_p" ? "fast_" + f.p : f.metric;
  if (!f.baseline.empty())
    s += fmt::format(" vs {}{}", f.baseline, f.baseline_assumed ? " (assumed)" : "");
  if (f.level) s += fmt::format(", level {}", *f.level);
  return s;
}

std::string published_text(const PublishedFigure& f) {
  return fmt::format("{}{:.3f}", f.bound == "below" ? "< " : "", f.value);
}

}  // namespace

std::optional<double> fast_p(const std::vector<Row>& rows, Baseline b, double p) {
  int fast = 0;
  bool measured = false;
  for (const auto& r : rows) {
    const auto& s = b == Baseline::kEager ? r.speedup_eager : r.speedup_compile;
    measured = measured || s.has_value();
    if (r.correct && s && *s > p) ++fast;
  }
  if (!measured || rows.empty()) return std::nullopt;
  return static_cast<double>(fast) / static_cast<double>(rows.size());
}

json score_json(const std::vector<Row>& rows, const BootstrapOptions& options) {
  json j = metrics_json(compute(rows));
  auto levels = by_level(rows);
  if (levels.size() > 1) {
    j["levels"] = json::object();
    for (const auto& [level, lr] : levels)
      j["levels"][std::to_string(level)] = metrics_json(compute(lr));
  }
  auto c = bootstrap(rows, options);
  json ci = {{"level", options.level},
             {"resamples", options.resamples},
             {"seed", options.seed},
             {"method", "percentile bootstrap over problems"}};
  for (Baseline b : kBaselines) {
    auto name = std::string(baseline_name(b));
    ci["fast_1.0"][name] = interval_json(c.of(b).fast_1);
    ci["geomean_speedup"][name] = interval_json(c.of(b).geomean_speedup);
    ci["geomean_speedup_fallback"][name] = interval_json(c.of(b).geomean_speedup_fallback);
  }
  j["ci"] = ci;
  return j;
}

std::string score_text(const std::vector<Row>& rows, const BootstrapOptions& options) {
  auto m = compute(rows);
  auto c = bootstrap(rows, options);
  std::string out =
      fmt::format("{} problems, {} correct ({:.1f}%)\n\n", m.n, m.correct, 100.0 * m.correct_rate);
  out += fmt::format("{:<28} {:<24} {:<24}\n", "metric", "vs eager", "vs torch.compile");
  auto line = [&](const std::string& name, auto value_of, auto ci_of) {
    std::string cells[2];
    for (Baseline b : kBaselines) {
      auto v = value_of(m.of(b));
      auto ci = ci_of(c.of(b));
      cells[b == Baseline::kEager ? 0 : 1] = fmt_opt(v) + (ci.empty() ? "" : " " + ci);
    }
    out += fmt::format("{:<28} {:<24} {:<24}\n", name, cells[0], cells[1]);
  };
  auto no_ci = [](const BaselineCi&) { return std::string(); };
  for (size_t i = 0; i < kThresholds.size(); ++i) {
    auto value = [i](const BaselineMetrics& bm) -> std::optional<double> {
      return bm.fast_p ? std::optional((*bm.fast_p)[i]) : std::nullopt;
    };
    if (kThresholds[i] == "1.0")
      line("fast_1.0", value, [](const BaselineCi& ci) { return fmt_ci(ci.fast_1); });
    else
      line("fast_" + std::string(kThresholds[i]), value, no_ci);
  }
  if (m.eager.fast_p_significant || m.compile.fast_p_significant)
    for (size_t i = 0; i < kThresholds.size(); ++i)
      line(
          "fast_" + std::string(kThresholds[i]) + " significant",
          [i](const BaselineMetrics& bm) -> std::optional<double> {
            return bm.fast_p_significant ? std::optional((*bm.fast_p_significant)[i])
                                         : std::nullopt;
          },
          no_ci);
  line(
      "geomean speedup (correct)", [](const BaselineMetrics& bm) { return bm.geomean_speedup; },
      [](const BaselineCi& ci) { return fmt_ci(ci.geomean_speedup); });
  line(
      "geomean speedup (fallback)",
      [](const BaselineMetrics& bm) { return bm.geomean_speedup_fallback; },
      [](const BaselineCi& ci) { return fmt_ci(ci.geomean_speedup_fallback); });
  out += fmt::format(
      "\n[lo, hi]: {:.0f}% percentile bootstrap over problems ({} resamples, seed {}).\n"
      "fast_p: correct and speedup > p, over all problems. fallback: incorrect or unmeasured "
      "problems count as 1.0.\n{}",
      100 * options.level, options.resamples, options.seed,
      m.eager.fast_p_significant || m.compile.fast_p_significant
          ? "significant: also without torch_ops_in_forward, the speedup's 95% interval above p.\n"
          : "");
  auto levels = by_level(rows);
  if (levels.size() > 1) {
    out += fmt::format("\n{:<6} {:>4} {:>8} {:>14} {:>14} {:>14} {:>14}\n", "level", "n", "correct",
                       "fast_1 eager", "fast_1 compile", "geomean eager", "geomean compile");
    for (const auto& [level, lr] : levels) {
      auto lm = compute(lr);
      auto f1 = [](const BaselineMetrics& bm) {
        return bm.fast_p ? std::optional((*bm.fast_p)[1]) : std::nullopt;
      };
      out += fmt::format("{:<6} {:>4} {:>8} {:>14} {:>14} {:>14} {:>14}\n", level, lm.n, lm.correct,
                         fmt_opt(f1(lm.eager)), fmt_opt(f1(lm.compile)),
                         fmt_opt(lm.eager.geomean_speedup), fmt_opt(lm.compile.geomean_speedup));
    }
  }
  return out;
}

util::Result<std::vector<PublishedFigure>> load_published(const std::filesystem::path& path) {
  auto text = util::read_file(path);
  if (!text) return std::unexpected(text.error());
  try {
    auto j = json::parse(*text);
    std::vector<PublishedFigure> out;
    for (const auto& s : j.at("systems")) {
      for (const auto& f : s.at("figures")) {
        PublishedFigure p;
        p.system = s.at("system");
        p.source = s.at("source");
        p.url = s.value("url", "");
        p.hardware = s.at("hardware");
        p.problems = s.at("problems");
        p.notes = s.value("notes", "");
        if (s.contains("levels")) p.levels = s["levels"].get<std::vector<int>>();
        p.metric = f.at("metric");
        p.p = f.value("p", "");
        p.baseline = f.value("baseline", "");
        p.baseline_assumed = f.value("baseline_assumed", false);
        if (f.contains("level")) p.level = f["level"].get<int>();
        p.value = f.at("value");
        p.bound = f.value("bound", "");
        p.as_published = f.value("as_published", "");
        out.push_back(std::move(p));
      }
    }
    return out;
  } catch (const json::exception& e) {
    return fail(ErrorKind::kBadInput,
                fmt::format("{}: malformed baselines file: {}", path.string(), e.what()));
  }
}

std::vector<Comparison> compare(const std::vector<Row>& rows,
                                const std::vector<PublishedFigure>& published) {
  std::vector<Comparison> out;
  for (const auto& f : published) {
    Comparison c{.published = f};
    std::vector<Row> mine;
    std::set<int> levels;
    for (const auto& r : rows) {
      bool in = f.level
                    ? r.level == *f.level
                    : f.levels.empty() || std::ranges::find(f.levels, r.level) != f.levels.end();
      if (!in) continue;
      mine.push_back(r);
      levels.insert(r.level);
    }
    c.our_n = static_cast<int>(mine.size());
    c.our_levels.assign(levels.begin(), levels.end());
    std::optional<Baseline> b;
    if (f.baseline == "eager") b = Baseline::kEager;
    if (f.baseline == "compile") b = Baseline::kCompile;
    if (mine.empty()) {
      c.why_not = "no problems of these levels in our file";
    } else if (f.metric == "correct_rate") {
      c.ours = compute(mine).correct_rate;
    } else if ((f.metric == "fast_p" || f.metric == "geomean_speedup") && b) {
      if (f.metric == "fast_p")
        c.ours = fast_p(mine, *b, parse_p(f.p));
      else
        c.ours = compute(mine).of(*b).geomean_speedup;
      if (!c.ours) c.why_not = fmt::format("no {} speedups measured", f.baseline);
    } else {
      c.why_not = "not a metric openkernel score computes";
    }
    out.push_back(std::move(c));
  }
  return out;
}

json compare_json(const std::vector<Comparison>& cs, const std::string& our_hardware) {
  json arr = json::array();
  for (const auto& c : cs) {
    const auto& f = c.published;
    json j = {{"system", f.system},
              {"metric", f.metric},
              {"baseline", f.baseline.empty() ? json(nullptr) : json(f.baseline)},
              {"baseline_assumed", f.baseline_assumed},
              {"level", f.level ? json(*f.level) : json(nullptr)},
              {"published",
               {{"value", f.value},
                {"bound", f.bound.empty() ? json(nullptr) : json(f.bound)},
                {"as_published", f.as_published},
                {"hardware", f.hardware},
                {"problems", f.problems},
                {"source", f.source},
                {"url", f.url},
                {"notes", f.notes}}},
              {"ours",
               {{"value", opt(c.ours)},
                {"n", c.our_n},
                {"levels", c.our_levels},
                {"hardware", our_hardware}}}};
    if (f.metric == "fast_p") j["p"] = f.p;
    if (!c.why_not.empty()) j["ours"]["why_not"] = c.why_not;
    arr.push_back(std::move(j));
  }
  return {{"comparisons", arr}};
}

std::string compare_markdown(const std::vector<Comparison>& cs, const std::string& our_hardware) {
  std::string out = fmt::format(
      "| metric | ours ({}) | our problems | published | system | hardware | problems | source "
      "|\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
      our_hardware);
  for (const auto& c : cs) {
    const auto& f = c.published;
    std::string source = f.url.empty() ? f.source : fmt::format("[{}]({})", f.source, f.url);
    out += fmt::format("| {} | {} | {} (levels {}) | {} | {} | {} | {} | {} |\n", metric_label(f),
                       c.ours ? fmt::format("{:.3f}", *c.ours) : "n/a: " + c.why_not, c.our_n,
                       levels_text(c.our_levels), published_text(f), f.system, f.hardware,
                       f.problems, source);
  }
  out +=
      "\nPublished figures come from different hardware, problem sets and baselines; "
      "see data/baselines/published.json.\n";
  return out;
}

std::string compare_text(const std::vector<Comparison>& cs, const std::string& our_hardware) {
  std::string out;
  std::string system;
  for (const auto& c : cs) {
    const auto& f = c.published;
    if (f.system != system) {
      system = f.system;
      out += fmt::format("\n{}\n  hardware {} · problems {}\n  source   {}{}\n", f.system,
                         f.hardware, f.problems, f.source, f.url.empty() ? "" : " <" + f.url + ">");
      if (!f.notes.empty()) out += fmt::format("  note     {}\n", f.notes);
    }
    std::string ours = c.ours ? fmt::format("{:.3f} ({} problems, levels {}, {})", *c.ours, c.our_n,
                                            levels_text(c.our_levels), our_hardware)
                              : "n/a (" + c.why_not + ")";
    out +=
        fmt::format("  {:<34} published {:<9} ours {}\n", metric_label(f), published_text(f), ours);
  }
  return out.empty() ? out : out.substr(1);
}

}  // namespace ok::score
