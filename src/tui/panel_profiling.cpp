// Profiling of the selected attempt's evaluation: the bottleneck, the roofline position (share of
// the speed of light, achieved bandwidth and compute against the device's ceilings, arithmetic
// intensity against the ridge point), a deep profile's dominant kernel (DRAM, SM and occupancy
// as ncu measured them, the top stall; docs/profiling.md) and the top kernels of its profile.
#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "profile/profile.hpp"
#include "tui/draw.hpp"
#include "tui/panels.hpp"

namespace ok::tui::panels {

namespace {

using nlohmann::json;

double num(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

// One gauge row: label, bar, percentage, and what it measures (`detail`, or `brief` where that
// does not fit).
void gauge_row(Canvas& c, Rect in, int y, std::string_view label, double fraction,
               const std::string& detail, const std::string& brief) {
  const int gw = std::clamp(in.w / 4, 6, 24);
  c.put(in.x, y, label, draw::kBold, 5);
  const Style st = fraction >= 0.7 ? draw::kGood : fraction >= 0.3 ? draw::kWarn : draw::kBad;
  draw::gauge(c, in.x + 5, y, gw, fraction, st);
  c.put(in.x + 5 + gw, y, fmt::format("{:>4.0f}% ", 100 * fraction), st);
  const int room = in.w - 11 - gw;
  c.put(in.x + 11 + gw, y, text_width(detail) <= room ? detail : brief, draw::kDim, room);
}

// The roofline rows from the evaluation's `roofline` (an object) and runtime; returns the next
// free row.
int roofline_rows(const json& ev, const AttemptView& a, Canvas& c, Rect in, int y) {
  const json& roof = ev["roofline"];
  const double rt = a.runtime_us.value_or(num(ev.value("runtime_us", json::object()), "median"));
  const double flops = num(roof, "flops"), bytes = num(roof, "bytes");
  const double bw = num(roof, "bandwidth_bytes_per_s"), peak = num(roof, "peak_flops");
  const double secs = rt * 1e-6;
  const double got_bw = secs > 0 ? bytes / secs : 0, got_flops = secs > 0 ? flops / secs : 0;
  const int bottom = in.y + in.h;
  const std::string floor = "floor " + draw::micros(num(roof, "floor_us"));
  if (y < bottom)
    gauge_row(c, in, y++, "SOL", num(roof, "fraction_of_speed_of_light"),
              floor + " / " + draw::micros(rt), floor);
  if (y < bottom)
    gauge_row(c, in, y++, "BW", bw > 0 ? got_bw / bw : 0, draw::si_of(got_bw, bw, "B/s"),
              draw::si(got_bw, "B/s"));
  if (y < bottom)
    gauge_row(c, in, y++, "FLOP", peak > 0 ? got_flops / peak : 0,
              draw::si_of(got_flops, peak, "FLOP/s"), draw::si(got_flops, "FLOP/s"));
  if (y < bottom && bytes > 0 && bw > 0) {  // the roofline position, its verdict first
    const double ai = flops / bytes, ridge = peak / bw;
    draw::Line l = {{ai >= ridge ? "compute-bound" : "memory-bound", draw::kAccent},
                    {fmt::format(" · AI {:.2f} FLOP/B, ridge {:.0f}", ai, ridge), draw::kDim}};
    draw::put_line(c, in.x, y++, l, in.w);
  }
  return y;
}

// A deep profile's rows (the dominant kernel as ncu measured it), when the evaluation has one;
// returns the next free row.
int deep_rows(const json& ev, Canvas& c, Rect in, int y) {
  const json prof = ev.value("profile", json::object());
  const json* k = profile::dominant_kernel(prof);
  const int bottom = in.y + in.h;
  if (!k || y >= bottom) return y;
  const bool named = k->contains("name") && (*k)["name"].is_string();
  draw::put_line(c, in.x, y++,
                 {{"ncu ", draw::kBold},
                  {fmt::format("{} · {}", named ? (*k)["name"].get<std::string>() : "?",
                               draw::micros(num(*k, "duration_us"))),
                   draw::kDim}},
                 in.w);
  const json lim = k->value("occupancy_limiter", json::object());
  const json by = lim.is_object() ? lim.value("by", json::array()) : json::array();
  const std::string limiter =
      by.is_array() && !by.empty() && by[0].is_string() ? "limit " + by[0].get<std::string>() : "";
  const struct {
    const char* label;
    const char* key;
    std::string detail;
  } rows[] = {{"DRAM", "dram_throughput_pct", "of peak bandwidth"},
              {"SM", "sm_throughput_pct", "of peak compute"},
              {"OCC", "achieved_occupancy_pct", limiter}};
  for (const auto& r : rows)
    if (y < bottom && k->contains(r.key) && (*k)[r.key].is_number())
      gauge_row(c, in, y++, r.label, num(*k, r.key) / 100, r.detail, "");
  const json stalls = k->value("top_stalls", json::array());
  if (y < bottom && stalls.is_array() && !stalls.empty() && stalls[0].is_object() &&
      stalls[0].contains("reason") && stalls[0]["reason"].is_string())
    c.put(in.x, y++,
          fmt::format("stall {} {:.0f}%", stalls[0]["reason"].get<std::string>(),
                      100 * num(stalls[0], "share")),
          draw::kDim, in.w);
  return y;
}

void kernel_rows(const json& ev, Canvas& c, Rect in, int y) {
  const json prof = ev.value("profile", json::object());
  const json table = prof.is_object() ? prof.value("kernel_table", json::array()) : json::array();
  if (!table.is_array() || table.empty() || y >= in.y + in.h) return;
  const int nw = std::max(8, in.w - 24);
  c.put(in.x, y++, fit(nw >= 11 ? "top kernels" : "kernels", nw, true) + "      us    n  share",
        draw::kDim, in.w);
  for (const auto& k : table) {
    if (y >= in.y + in.h) break;
    const double share = num(k, "share");
    // Type-checked reads: a stored result is data, and a wrong type must not end the UI.
    const bool named = k.is_object() && k.contains("name") && k["name"].is_string();
    c.put(in.x, y, fit(named ? k["name"].get<std::string>() : "?", nw, true), draw::kPlain);
    c.put(in.x + nw, y, fmt::format("{:>8.1f}{:>5.0f} ", num(k, "us"), num(k, "launches")),
          draw::kPlain);
    draw::gauge(c, in.x + nw + 14, y, std::min(6, in.w - nw - 14), share, draw::kAccent);
    c.put(in.x + nw + 20, y, fmt::format("{:>3.0f}%", 100 * share), draw::kDim, in.w - nw - 20);
    ++y;
  }
}

// The roofline and top kernels of `a`'s evaluation in `body` from row `y`; false when the
// evaluation has no roofline.
bool profile_rows(const AttemptView& a, const Details& d, Canvas& c, Rect body, int y) {
  std::optional<json> ev;
  if (a.evaluation_id && d.evaluation) ev = d.evaluation(*a.evaluation_id);
  if (!ev || !ev->is_object() || !ev->contains("roofline") || !(*ev)["roofline"].is_object())
    return false;
  kernel_rows(*ev, c, body, deep_rows(*ev, c, body, roofline_rows(*ev, a, c, body, y)));
  return true;
}

}  // namespace

void profiling(const Snapshot& s, const UiState& ui, const Details& d, Canvas& c, Rect r) {
  const AttemptView* a = selected_attempt(s, ui);
  const Rect in = frame(c, r, Panel::Profiling,
                        a ? fmt::format("Profiling · #{}", a->number) : "Profiling", ui);
  if (in.empty()) return;
  if (!a) {
    c.put(in.x, in.y, "no attempt yet", draw::kDim, in.w);
    return;
  }
  draw::Line head = {{a->verdict, draw::verdict_style(a->verdict)}};
  if (a->correct)
    head.push_back(
        {" " + draw::speedup(a->speedup) + " · " + draw::micros(a->runtime_us), draw::kPlain});
  int y = in.y;
  if (!a->bottleneck.empty()) {  // beside the verdict, or below it when narrow
    const draw::Line b = {{"bottleneck ", draw::kDim},
                          {a->bottleneck, {.fg = Color::Magenta, .bold = true}}};
    const int hw = text_width(head[0].text) + (head.size() > 1 ? text_width(head[1].text) : 0);
    const int bw = text_width(b[0].text) + text_width(b[1].text);
    if (hw + 3 + bw <= in.w) {
      head.push_back({" · ", draw::kDim});
      head.insert(head.end(), b.begin(), b.end());
    } else {
      draw::put_line(c, in.x, ++y, b, in.w);
    }
  }
  draw::put_line(c, in.x, in.y, head, in.w);
  ++y;
  Rect body = in;  // the last row for the flags when any fired
  if (!a->flags.empty() && in.h >= 3) {
    --body.h;
    std::string flags;
    for (const auto& f : a->flags) flags += (flags.empty() ? "" : ", ") + f;
    draw::put_line(c, in.x, in.y + in.h - 1, {{"flags ", draw::kBold}, {flags, draw::kWarn}}, in.w);
  }
  if (profile_rows(*a, d, c, body, y)) return;
  // Nothing to profile: why, in the evaluation's words; then the best attempt's profile to
  // compare with, when there is room.
  const std::string why = !a->error.empty()  ? a->error
                          : a->evaluation_id ? "no roofline: the floor was not computed"
                                             : "not evaluated: no profile";
  for (const auto& l : draw::wrap(why, body.w)) {
    if (y >= body.y + body.h) break;
    c.put(in.x, y++, l, a->error.empty() ? draw::kDim : draw::kBad, in.w);
  }
  const AttemptView* best = s.best();
  if (!best || best == a || body.y + body.h - y < 5) return;
  const std::string label = fmt::format(" best #{} ", best->number);
  for (int x = in.x; x < in.x + in.w; ++x) c.put(x, y + 1, "┈", draw::kDim);
  c.put(in.x + 2, y + 1, label, draw::kDim);
  profile_rows(*best, d, c, {body.x, y + 2, body.w, body.y + body.h - y - 2}, y + 2);
}

}  // namespace ok::tui::panels
