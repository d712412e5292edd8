#include "optimize/report.hpp"

#include <fmt/core.h>

#include "optimize/prompts.hpp"

namespace ok::optimize {

using nlohmann::json;

namespace {

json opt(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

std::string fmt_opt(const json& v, const char* spec, const char* none = "-") {
  if (!v.is_number()) return none;
  return fmt::format(fmt::runtime(spec), v.get<double>());
}

// The verdict of a session: correct when any attempt was, else the verdict of the last
// evaluated attempt (or why nothing was evaluated).
std::string session_verdict(const Outcome& out) {
  if (out.best) return "correct";
  for (auto it = out.attempts.rbegin(); it != out.attempts.rend(); ++it)
    if (it->evaluation_id) return it->verdict;
  if (!out.attempts.empty()) return out.attempts.back().verdict;
  return "no_attempts";
}

// The skills the session was fed, with what each did, and the skill it taught (docs/skills.md).
std::string skills_markdown(const json& skills) {
  if (!skills.is_object()) return "";
  std::string md = "## Skills\n\n";
  const json used = skills.value("used", json::array());
  if (used.empty()) md += "No skill of the library applied.\n";
  if (!used.empty()) md += "| rank | skill | from | outcome | what |\n|---|---|---|---|---|\n";
  for (const auto& u : used)
    md += fmt::format("| {} | `{}` | {} | {} | {} |\n", u.value("rank", 0) + 1, u.value("id", ""),
                      u.value("provenance", ""), u.value("outcome", ""), u.value("title", ""));
  const json learned = skills.value("learned", json());
  if (learned.is_object())
    md += fmt::format("\n{} `{}`: {}\n", learned.value("new", false) ? "Learnt" : "Confirmed",
                      learned.value("id", ""), learned.value("title", ""));
  return md + "\n";
}

}  // namespace

json report_json(const Options& o, const Outcome& out) {
  json j;
  j["session"] = out.session;
  j["status"] = out.status;
  j["stop_reason"] = out.stop_reason;
  j["search"] = out.search;
  j["problem"] = {{"name", o.name},
                  {"reference", o.reference},
                  {"level", o.level ? json(*o.level) : json(nullptr)},
                  {"problem", o.number ? json(*o.number) : json(nullptr)},
                  {"overrides", o.overrides}};
  j["backend"] = o.backend;
  j["model"] = o.model;
  j["mode"] = o.mode;
  j["device"] = out.device.is_object() ? out.device.value("name", json(nullptr)) : json(nullptr);
  j["verdict"] = session_verdict(out);
  const Attempt* best = out.best ? &out.attempts[*out.best] : nullptr;
  j["speedup"] = best ? opt(best->speedup) : json(nullptr);
  j["runtime_us"] = best ? opt(best->runtime_us) : json(nullptr);
  // Eager time from the best attempt's own evaluation, so speedup = eager / runtime holds.
  j["eager_runtime_us"] = opt(out.eager_runtime_us);
  if (best && best->summary.is_object() && best->summary.contains("ref_runtime_us") &&
      best->summary["ref_runtime_us"].is_number())
    j["eager_runtime_us"] = best->summary["ref_runtime_us"];
  j["compile_runtime_us"] = opt(out.compile_runtime_us);
  // The standard errors of the three times (docs/tsv.md), null when not measured.
  auto best_value = [best](const char* key) {
    return best && best->summary.is_object() ? best->summary.value(key, json(nullptr))
                                             : json(nullptr);
  };
  j["runtime_stderr_us"] = best_value("runtime_stderr_us");
  j["eager_runtime_stderr_us"] = best_value("ref_runtime_stderr_us");
  j["compile_runtime_stderr_us"] = opt(out.compile_runtime_stderr_us);
  j["speedup_compile"] = (best && best->runtime_us && out.compile_runtime_us)
                             ? json(*out.compile_runtime_us / *best->runtime_us)
                             : json(nullptr);
  json sol = nullptr, bw_frac = nullptr;
  if (best && best->summary.is_object() && best->summary.contains("roofline")) {
    const json& r = best->summary["roofline"];
    if (r.is_object()) {
      sol = r.value("fraction_of_speed_of_light", json(nullptr));
      double bytes = r.value("bytes", 0.0), bw = r.value("bandwidth_bytes_per_s", 0.0);
      if (bytes > 0 && bw > 0 && best->runtime_us && *best->runtime_us > 0)
        bw_frac = bytes / (*best->runtime_us * 1e-6) / bw;
    }
  }
  // The best evaluation's integrity flags (names; docs/evaluation.md), for sweeps' TSV.
  json flags = json::array();
  if (best && best->summary.is_object() && best->summary.contains("flags") &&
      best->summary["flags"].is_array())
    for (const auto& f : best->summary["flags"]) {
      if (f.is_string())
        flags.push_back(f);
      else if (f.is_object() && f.contains("name"))
        flags.push_back(f["name"]);
    }
  j["flags"] = std::move(flags);
  j["fraction_of_speed_of_light"] = sol;
  j["bandwidth_fraction"] = bw_frac;
  j["best_candidate"] = best ? json(out.best_path.string()) : json(nullptr);
  j["best_attempt"] = best ? json(best->number) : json(nullptr);
  j["attempts"] = out.attempts.size();
  j["cost_usd"] = out.cost_usd;
  j["out_dir"] = o.out_dir.string();
  if (!out.error.empty()) j["error"] = out.error;
  json history = json::array();
  for (const auto& a : out.attempts) {
    json h = {{"number", a.number},
              {"generator", a.generator},
              {"verdict", a.verdict},
              {"correct", a.correct},
              {"speedup", opt(a.speedup)},
              {"runtime_us", opt(a.runtime_us)},
              {"error", trim_middle(a.error, 800)},
              {"cost_usd", a.cost_usd},
              {"wall_s", a.wall_s},
              {"description", a.description},
              {"params", a.params},
              {"path", a.path}};
    h["bottleneck"] =
        a.diagnosis.is_object() ? a.diagnosis.value("bottleneck", json(nullptr)) : json(nullptr);
    h["evaluation_id"] = a.evaluation_id ? json(*a.evaluation_id) : json(nullptr);
    history.push_back(std::move(h));
  }
  j["history"] = std::move(history);
  return j;
}

std::string report_markdown(const json& r) {
  std::string md;
  const json& p = r["problem"];
  md += fmt::format("# OpenKernel optimisation: {}\n\n", p.value("name", "?"));
  md += fmt::format("- session `{}` ({}, stopped: {})\n", r.value("session", ""),
                    r.value("status", ""), r.value("stop_reason", ""));
  md += fmt::format("- reference `{}`\n", p.value("reference", ""));
  md += fmt::format("- backend {}, model {}, mode {}, device {}\n", r.value("backend", ""),
                    r.value("model", ""), r.value("mode", ""),
                    r["device"].is_string() ? r["device"].get<std::string>() : "?");
  md += "\n## Result\n\n";
  md += fmt::format(
      "| verdict | speedup vs eager | speedup vs torch.compile | runtime | eager | "
      "speed of light | cost |\n|---|---|---|---|---|---|---|\n");
  md += fmt::format(
      "| {} | {} | {} | {} | {} | {} | ${:.4f} |\n\n", r.value("verdict", ""),
      fmt_opt(r["speedup"], "{:.3f}x"), fmt_opt(r["speedup_compile"], "{:.3f}x", "n/a"),
      fmt_opt(r["runtime_us"], "{:.1f} us"), fmt_opt(r["eager_runtime_us"], "{:.1f} us"),
      r["fraction_of_speed_of_light"].is_number()
          ? fmt::format("{:.0f}%", 100 * r["fraction_of_speed_of_light"].get<double>())
          : std::string("-"),
      r.value("cost_usd", 0.0));
  if (r["best_candidate"].is_string())
    md += fmt::format("Best kernel: `{}` (attempt {}).\n\n", r["best_candidate"].get<std::string>(),
                      r["best_attempt"].dump());
  else
    md += "No correct kernel was found.\n\n";
  if (r.contains("search") && r["search"].is_object())
    md += skills_markdown(r["search"].value("skills", json()));
  md +=
      "## Attempts\n\n| # | verdict | speedup | runtime | bottleneck | wall | cost | what |\n"
      "|---|---|---|---|---|---|---|---|\n";
  for (const auto& a : r["history"]) {
    md += fmt::format("| {} | {} | {} | {} | {} | {:.1f} s | ${:.4f} | {} |\n",
                      a.value("number", 0), a.value("verdict", ""),
                      fmt_opt(a["speedup"], "{:.3f}x"), fmt_opt(a["runtime_us"], "{:.1f} us"),
                      a["bottleneck"].is_string() ? a["bottleneck"].get<std::string>() : "-",
                      a.value("wall_s", 0.0), a.value("cost_usd", 0.0), a.value("description", ""));
  }
  bool errors = false;
  for (const auto& a : r["history"]) {
    std::string e = a.value("error", "");
    if (e.empty()) continue;
    if (!errors) md += "\n## Errors\n\n";
    errors = true;
    md += fmt::format("Attempt {} ({}):\n\n```\n{}\n```\n\n", a.value("number", 0),
                      a.value("verdict", ""), e);
  }
  return md;
}

}  // namespace ok::optimize
