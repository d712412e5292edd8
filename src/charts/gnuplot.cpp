#include "charts/gnuplot.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "util/paths.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

namespace ok::charts {

namespace fs = std::filesystem;
using nlohmann::json;
using util::ErrorKind;
using util::fail;

namespace {

// Tableau 10: distinct in colour and in grey.
constexpr const char* kColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string colour(size_t i) {
  return kColours[i % std::size(kColours)];
}

// A gnuplot string literal (double quotes; backslashes and quotes escaped).
std::string q(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' || c == '\t' ? ' ' : c;
  }
  return out + "\"";
}

std::string qj(const json& j) {
  return q(j.is_string() ? j.get<std::string>() : j.dump());
}

// A data field: a number, or NaN (gnuplot skips the point).
std::string num(const json& v) {
  return v.is_number() ? fmt::format("{:.10g}", v.get<double>()) : "NaN";
}

struct Body {
  int width = 1000, height = 560;
  std::string setup, plot;
  std::map<std::string, std::string> data;  // file name -> content
};

std::string path_in(const fs::path& dir, const std::string& name) {
  return q((dir / name).string());
}

std::string axis_setup(const json& c) {
  std::string s = fmt::format("set title {} font \",13\"\n", q(c.value("title", "")));
  for (const char* a : {"x", "y"}) {
    if (!c.contains(a)) continue;
    const json& ax = c[a];
    s += fmt::format("set {}label {}\n", a, q(ax.value("label", "")));
    if (ax.value("scale", "") == "log") s += fmt::format("set logscale {}\n", a);
    if (ax.contains("range") && ax["range"].is_array())
      s += fmt::format("set {}range [{}:{}]\n", a, num(ax["range"][0]), num(ax["range"][1]));
  }
  return s;
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ", \\\n     ") + p;
  return s;
}

// A tic label over several lines: "fast_1.0 vs eager, levels 1,2,3" -> two lines.
std::string tic_label(const json& label) {
  std::string s = label.is_string() ? label.get<std::string>() : label.dump();
  for (size_t at = s.find(", "); at != std::string::npos; at = s.find(", ", at))
    s.replace(at, 2, "\n");
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out + "\"";
}

// A legend below the plot in two columns, with the bottom margin it needs (in lines) beside
// `tic_lines` lines of x tic labels and the axis label.
std::string key_below(size_t entries, int tic_lines) {
  return fmt::format("set key outside below left Left reverse maxcols 2\nset bmargin {}\n",
                     tic_lines + 3 + static_cast<int>((entries + 1) / 2));
}

// Grouped bars: one group per category holding only the series that have a value there (a
// published system reports few metrics), each bar's value printed above it.
Body bars(const json& c, const fs::path& dir) {
  Body b;
  const json& cats = c["categories"];
  const json& series = c["series"];
  std::vector<std::string> blocks(series.size());
  std::string tics;
  double x = 0;
  for (size_t k = 0; k < cats.size(); ++k) {
    const double start = x;
    for (size_t i = 0; i < series.size(); ++i) {
      const json& v = series[i]["values"][k];
      if (!v.is_number()) continue;
      const bool below = series[i].contains("bounds") && series[i]["bounds"][k] == "below";
      const json& n = series[i].contains("n") ? series[i]["n"][k] : json(nullptr);
      blocks[i] +=
          fmt::format("{}\t{}\t\"{}{:.2f}{}\"\n", x, num(v), below ? "<" : "", v.get<double>(),
                      n.is_number() ? fmt::format("\\nn={}", n.dump()) : "");
      x += 1;
    }
    if (x > start)
      tics +=
          fmt::format("{}{} {}", tics.empty() ? "" : ", ", tic_label(cats[k]), (start + x - 1) / 2);
    x += 1;  // the gap between groups
  }
  std::string dat;
  for (const auto& block : blocks) dat += (block.empty() ? "NaN\tNaN\t\"\"\n" : block) + "\n\n";
  b.data["bars.dat"] = dat;
  b.width = std::max(900, 220 + 34 * static_cast<int>(x));
  b.height = 560 + 20 * static_cast<int>((series.size() + 1) / 2);
  b.setup = fmt::format(
      "set boxwidth 0.85 absolute\nset xrange [-1:{}]\nset xtics ({}) nomirror scale 0\n"
      "set grid ytics\nunset xlabel\n{}",
      x - 1, tics.empty() ? "\"\" 0" : tics, key_below(series.size(), 2));
  // Room above the tallest bar for its label.
  b.setup += c["y"].contains("range") ? "set yrange [0:1.12]\n"
                                      : "set yrange [0:*]\nset offsets 0,0,graph 0.1,0\n";
  std::vector<std::string> parts;
  for (size_t i = 0; i < series.size(); ++i) {
    const json& s = series[i];
    std::string title = s.value("name", "");
    if (auto hw = s.value("hardware", ""); !hw.empty()) title += " [" + hw + "]";
    const bool published = s.contains("ours") && !s["ours"].get<bool>();
    if (s.contains("ours") && !published) title = "ours: " + title;
    const std::string src = i == 0 ? path_in(dir, "bars.dat") : "''";
    parts.push_back(fmt::format(
        "{} index {} using 1:2 with boxes title {} lc rgb {} fill {} border lc rgb \"#333333\"",
        src, i, q(title), q(colour(i)), published ? "pattern 4" : "solid 0.9"));
    parts.push_back(
        fmt::format("'' index {} using 1:2:3 with labels offset 0,1.2 font \",8\" notitle", i));
  }
  b.plot = parts.empty() ? "plot NaN notitle" : "plot " + join(parts);
  return b;
}

// Box plots from the series' own quartiles (not gnuplot's), every value as a point beside.
Body box(const json& c, const fs::path& dir) {
  Body b;
  std::string stats = "# x\tq1\tmin\tmax\tq3\tmedian\tname\n", points;
  std::vector<std::string> tics;
  const json& series = c["series"];
  for (size_t i = 0; i < series.size(); ++i) {
    const json& st = series[i]["stats"];
    stats += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\n", i, num(st["q1"]), num(st["min"]),
                         num(st["max"]), num(st["q3"]), num(st["median"]),
                         q(series[i].value("name", "")));
    const json& v = series[i]["values"];
    for (size_t k = 0; k < v.size(); ++k)  // spread sideways, deterministically
      points += fmt::format(
          "{:.4f}\t{}\n",
          static_cast<double>(i) + 0.3 + 0.1 * std::sin(static_cast<double>(k) * 2.4), num(v[k]));
    tics.push_back(
        fmt::format("{} {}",
                    tic_label(fmt::format("{}, vs {}, n={}", series[i].value("run", ""),
                                          series[i].value("baseline", ""), st.value("n", 0))),
                    i));
  }
  b.width = std::max(1000, 200 + 270 * static_cast<int>(series.size()));
  b.data["stats.dat"] = stats;
  b.data["points.dat"] = points.empty() ? "NaN\tNaN\n" : points;
  std::string tic_list;
  for (const auto& t : tics) tic_list += (tic_list.empty() ? "" : ", ") + t;
  b.setup = fmt::format(
      "set xrange [-0.6:{}]\nset xtics ({}) nomirror\nset grid ytics\n"
      "set boxwidth 0.4\nset key top left\n"
      "set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb \"#777777\"\n"
      "set bmargin 6\nunset xlabel\n",
      static_cast<double>(series.size()) - 0.4, tic_list);
  b.plot = "plot " +
           join({fmt::format("{} using 1:2:3:4:5 with candlesticks whiskerbars 0.5 lc rgb {} "
                             "fill solid 0.35 title \"quartiles, min and max\"",
                             path_in(dir, "stats.dat"), q(colour(0))),
                 "'' using 1:6:6:6:6 with candlesticks lc rgb \"black\" lw 2 title \"median\"",
                 fmt::format("{} using 1:2 with points pt 7 ps 0.5 lc rgb {} title \"problems\"",
                             path_in(dir, "points.dat"), q(colour(1)))});
  return b;
}

// Positions of names in the order first seen.
struct Index {
  std::vector<std::string> seen;
  size_t index(const std::string& name) {
    auto it = std::ranges::find(seen, name);
    if (it != seen.end()) return static_cast<size_t>(it - seen.begin());
    seen.push_back(name);
    return seen.size() - 1;
  }
};

// Lines or points: one data block per series; a series marked `frontier` drawn as steps.
Body xy(const json& c, const fs::path& dir, bool lines) {
  Body b;
  std::string dat;
  std::vector<std::string> parts;
  const json& series = c["series"];
  Index runs, ps;  // a colour per run, a dash pattern per threshold
  for (size_t i = 0; i < series.size(); ++i) {
    const json& s = series[i];
    dat += fmt::format("# {}\n", s.value("name", ""));
    for (size_t k = 0; k < s["x"].size(); ++k)
      dat += fmt::format("{}\t{}\n", num(s["x"][k]), num(s["y"][k]));
    if (s["x"].empty()) dat += "NaN\tNaN\n";
    dat += "\n\n";
    const bool frontier = s.value("frontier", false);
    std::string style =
        frontier
            ? "steps lw 2 dt 2 lc rgb \"black\""
            : fmt::format("{} lw 2 pt 7 ps 0.6 lc rgb {} dt {}", lines ? "linespoints" : "points",
                          q(colour(runs.index(s.value("run", s.value("name", ""))))),
                          ps.index(s.value("p", "")) + 1);
    parts.push_back(fmt::format("{} index {} using 1:2 with {} title {}",
                                i == 0 ? path_in(dir, "series.dat") : "''", i, style,
                                q(s.value("name", ""))));
  }
  b.data["series.dat"] = dat.empty() ? "NaN\tNaN\n" : dat;
  b.setup = key_below(series.size(), 1) + "set grid\n";
  if (!lines)
    b.setup += "set xrange [0<*:*]\nset offsets graph 0.02, graph 0.05, graph 0.05, graph 0.02\n";
  b.height = 480 + 20 * static_cast<int>((series.size() + 1) / 2);
  b.plot = parts.empty() ? "plot NaN notitle" : "plot " + join(parts);
  return b;
}

// A grid of cells coloured by log2(z) around 1x (saturating beyond 1/16x and 16x), each labelled
// with z or its `text`; a cell without z keeps the grey background.
Body heatmap(const json& c, const fs::path& dir) {
  Body b;
  const json& xs = c["x"]["categories"];
  const json& ys = c["y"]["categories"];
  std::string cells;
  for (size_t y = 0; y < ys.size(); ++y)
    for (size_t x = 0; x < xs.size(); ++x) {
      const json& z = c["z"][y][x];
      std::string label = z.is_number() ? fmt::format("{:.2f}x", z.get<double>())
                                        : c["text"][y][x].get<std::string>();
      cells += fmt::format(
          "{}\t{}\t{}\t{}\n", x, y,
          z.is_number() ? fmt::format("{:.6g}", std::log2(z.get<double>())) : "NaN", q(label));
    }
  b.data["cells.dat"] = cells.empty() ? "NaN\tNaN\tNaN\t\"\"\n" : cells;
  constexpr int kRange = 4;  // 1/16x .. 16x
  std::string xt, yt, cbt;
  for (size_t x = 0; x < xs.size(); ++x)
    xt += fmt::format("{}{} {}", x ? ", " : "", tic_label(xs[x]), x);
  for (size_t y = 0; y < ys.size(); ++y) yt += fmt::format("{}{} {}", y ? ", " : "", qj(ys[y]), y);
  for (int e = -kRange; e <= kRange; ++e)
    cbt += fmt::format("{}\"{}x\" {}", cbt.empty() ? "" : ", ",
                       e >= 0 ? fmt::format("{}", 1 << e) : fmt::format("1/{}", 1 << -e), e);
  b.width = 700 + 190 * static_cast<int>(xs.size());
  b.height = 200 + 17 * static_cast<int>(ys.size());
  b.setup = fmt::format(
      "set xrange [-0.5:{}]\nset yrange [{}:-0.5]\nset x2range [-0.5:{}]\n"
      "set x2tics ({}) nomirror scale 0\nunset xtics\nset ytics ({}) nomirror scale 0 font \",8\"\n"
      "set palette defined (-1 \"#b2182b\", 0 \"#f7f7f7\", 1 \"#2166ac\")\n"
      "set cbrange [{}:{}]\nset cbtics ({})\nset cblabel {}\nunset key\nunset xlabel\nunset "
      "ylabel\n"
      "set object 1 rectangle from graph 0,0 to graph 1,1 behind fc rgb \"#e4e4e4\" "
      "fillstyle solid noborder\n",
      static_cast<double>(xs.size()) - 0.5, static_cast<double>(ys.size()) - 0.5,
      static_cast<double>(xs.size()) - 0.5, xt, yt, -kRange, kRange, cbt,
      q(c.value("z_label", "")));
  b.plot =
      "plot " + join({fmt::format("{} using 1:2:(0.5):(0.5):($3 > {} ? {} : $3 < -{} ? -{} : $3) "
                                  "with boxxyerror fc palette fillstyle solid noborder",
                                  path_in(dir, "cells.dat"), kRange, kRange, kRange, kRange),
                      "'' using 1:2:4 with labels font \",7\""});
  return b;
}

Body body(const json& c, const fs::path& dir) {
  const std::string kind = c.value("kind", "");
  if (kind == "bars") return bars(c, dir);
  if (kind == "box") return box(c, dir);
  if (kind == "lines") return xy(c, dir, true);
  if (kind == "scatter") return xy(c, dir, false);
  if (kind == "heatmap") return heatmap(c, dir);
  Body b;
  b.plot = "plot NaN notitle";
  return b;
}

std::string terminal(const std::string& format, int width, int height) {
  if (format == "svg")
    return fmt::format(
        "set terminal svg size {},{} dynamic noenhanced font \"DejaVu Sans,11\" "
        "background rgb \"white\"",
        width, height);
  return fmt::format("set terminal pngcairo size {},{} noenhanced font \"DejaVu Sans,10\"", width,
                     height);
}

struct Script {
  std::string text;
  std::map<std::string, std::string> data;
};

Script make_script(const json& chart, const fs::path& data_dir, const fs::path& out_stem,
                   const std::vector<std::string>& formats) {
  Body b = body(chart, data_dir);
  std::string s = fmt::format("# {} ({}), drawn by openkernel charts from chart_data\n",
                              chart.value("id", ""), chart.value("kind", ""));
  for (const auto& f : formats) {
    s += terminal(f, b.width, b.height) + "\n";
    s += fmt::format("set output {}\n", q(out_stem.string() + "." + f));
    s += "reset\nset datafile separator \"\\t\"\nset datafile missing \"NaN\"\n";
    s += "set termoption noenhanced\n";
    s += axis_setup(chart) + b.setup + b.plot + "\nunset output\n";
  }
  return {s, b.data};
}

}  // namespace

std::string gnuplot_script(const json& chart, const fs::path& data_dir, const fs::path& out_stem,
                           const std::vector<std::string>& formats) {
  return make_script(chart, data_dir, out_stem, formats).text;
}

util::Result<void> check_renderer(const RenderOptions& options) {
  std::string probe;
  for (const auto& f : options.formats) {
    if (std::ranges::find(kFormats, f) == std::end(kFormats))
      return fail(ErrorKind::kUsage, fmt::format("unknown format '{}' (use png, svg)", f));
    probe += terminal(f, 100, 100) + "; ";
  }
  auto run = util::run_capture({options.gnuplot, "-e", probe}, std::chrono::seconds(20));
  if (run && run->status.exited && run->status.code == 0) return {};
  return fail(
      ErrorKind::kEnvironment,
      fmt::format("cannot draw charts with '{}': {} (install Debian's gnuplot-nox; "
                  "scripts/setup.sh names it)",
                  options.gnuplot,
                  !run                                            ? run.error().message
                  : run->status.exited && run->status.code == 127 ? std::string("not found")
                                                                  : util::trim(run->output)));
}

util::Result<std::vector<fs::path>> render(const json& data, const fs::path& out,
                                           const RenderOptions& options) {
  if (auto ok = check_renderer(options); !ok) return std::unexpected(ok.error());
  std::vector<fs::path> written;
  for (const auto& chart : data.at("charts")) {
    const std::string id = chart.value("id", "chart");
    const fs::path dir = out / "gnuplot" / id;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      return fail(ErrorKind::kBadInput,
                  fmt::format("cannot create {}: {}", dir.string(), ec.message()));
    Script s = make_script(chart, dir, out / id, options.formats);
    for (const auto& [name, content] : s.data)
      if (auto w = util::write_file(dir / name, content); !w) return std::unexpected(w.error());
    if (auto w = util::write_file(dir / (id + ".gp"), s.text); !w)
      return std::unexpected(w.error());
    auto run = util::run_capture({options.gnuplot, (dir / (id + ".gp")).string()},
                                 std::chrono::seconds(60));
    if (!run) return std::unexpected(run.error());
    if (!run->status.exited || run->status.code != 0)
      return fail(ErrorKind::kInternal,
                  fmt::format("gnuplot failed on {} ({}): {}", (dir / (id + ".gp")).string(),
                              run->status.describe(), run->output));
    for (const auto& f : options.formats) written.push_back(out / (id + "." + f));
  }
  return written;
}

}  // namespace ok::charts
