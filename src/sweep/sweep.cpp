#include "sweep/sweep.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>

#include "problems/kernelbench.hpp"
#include "sweep/task_files.hpp"
#include "util/strings.hpp"

namespace ok::sweep {

namespace fs = std::filesystem;
using nlohmann::json;
using util::ErrorKind;
using util::fail;
using namespace files;

namespace {

std::optional<double> number(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  double v = j[key].get<double>();
  if (!std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

std::string task_dir_name(int level, int number, const std::string& name) {
  return fmt::format("L{}_{:03}_{}", level, number, name);
}

}  // namespace

util::Result<std::vector<int>> parse_selection(std::string_view text) {
  std::string spec = util::trim(text), error;
  std::vector<int> out;
  if (spec.empty()) return fail(ErrorKind::kUsage, "empty problem selection (use e.g. 1-20,35)");
  if (!util::parse_id_ranges(spec, out, error))
    return fail(ErrorKind::kUsage,
                fmt::format("bad problem selection '{}': {} (use e.g. 1-20,35)", spec, error));
  if (!out.empty() && out.front() < 1)
    return fail(ErrorKind::kUsage,
                fmt::format("bad problem selection '{}': problem numbers start at 1", spec));
  return out;
}

fs::path work_dir(const fs::path& output) {
  fs::path p = output;
  p.replace_extension();
  if (p == output) p += ".d";  // an output without an extension
  return p;
}

TaskState task_state(const Task& t) {
  json r = read_json(t.dir / kReport);
  if (r.is_object() && r.value("status", "") == "finished") return TaskState::kDone;
  if (r.is_object() || fs::exists(t.dir / kSession) || fs::exists(t.dir / kError))
    return TaskState::kStarted;
  return TaskState::kNew;
}

std::optional<score::Row> task_row(const Task& t) {
  score::Row row;
  row.level = t.level;
  row.problem_id = t.number;
  row.name = t.name;
  json r = read_json(t.dir / kReport);
  // A session stopped before its first attempt says nothing about the problem yet: no row.
  if (r.is_object() && r.value("status", "") != "finished" && r.value("attempts", 0) == 0)
    r = nullptr;
  if (r.is_object()) {
    row.backend = r.value("backend", "");
    row.model = r.value("model", "");
    row.verdict = r.value("verdict", "");
    row.correct = row.verdict == "correct";
    row.eager_us = number(r, "eager_runtime_us");
    row.compile_us = number(r, "compile_runtime_us");
    if (row.correct) {
      row.runtime_us = number(r, "runtime_us");
      row.speedup_eager = number(r, "speedup");
      row.speedup_compile = number(r, "speedup_compile");
      if (row.speedup_eager && *row.speedup_eager <= 0) row.speedup_eager.reset();
      if (row.speedup_compile && *row.speedup_compile <= 0) row.speedup_compile.reset();
    }
    if (r.contains("attempts") && r["attempts"].is_number_integer())
      row.attempts = r["attempts"].get<int>();
    row.cost_usd = number(r, "cost_usd");
    row.eager_stderr_us = number(r, "eager_runtime_stderr_us");
    row.compile_stderr_us = number(r, "compile_runtime_stderr_us");
    if (row.correct) row.runtime_stderr_us = number(r, "runtime_stderr_us");
    if (r.contains("device") && r["device"].is_string())
      row.device = r["device"].get<std::string>();
    std::vector<std::string> flags;
    if (r.contains("flags") && r["flags"].is_array())
      for (const auto& f : r["flags"])
        if (f.is_string()) flags.push_back(f.get<std::string>());
    row.flags = util::join(flags, ",");
    return row;
  }
  json e = read_json(t.dir / kError);
  if (!e.is_object()) return std::nullopt;
  row.backend = e.value("backend", "");
  row.model = e.value("model", "");
  row.verdict = "error";
  row.attempts = 0;
  return row;
}

util::Result<std::vector<score::Row>> write_results(const fs::path& output) {
  static const std::regex kTaskDir(R"(L(\d+)_(\d+)_(.+))");
  std::vector<score::Row> rows;
  std::vector<fs::path> dirs;  // the folder of each row
  fs::path work = work_dir(output);
  std::error_code ec;
  if (fs::is_directory(work, ec)) {
    for (const auto& entry : fs::directory_iterator(work, ec)) {
      std::smatch m;
      std::string name = entry.path().filename().string();
      if (!entry.is_directory() || !std::regex_match(name, m, kTaskDir)) continue;
      Task t;
      t.level = std::stoi(m[1].str());
      t.number = std::stoi(m[2].str());
      t.name = m[3].str();
      t.dir = entry.path();
      auto row = task_row(t);
      if (!row) continue;
      // Two folders for one problem (a renamed KernelBench file): the newest run wins, so the
      // TSV keeps one row per problem.
      auto stamp = [&ec](const fs::path& d) {
        for (const char* f : {kReport, kError})
          if (auto w = fs::last_write_time(d / f, ec); !ec) return w;
        return fs::file_time_type::min();
      };
      auto same = std::find_if(rows.begin(), rows.end(), [&](const score::Row& r) {
        return r.level == row->level && r.problem_id == row->problem_id;
      });
      if (same == rows.end()) {
        rows.push_back(std::move(*row));
        dirs.push_back(t.dir);
      } else if (stamp(t.dir) > stamp(dirs[same - rows.begin()])) {
        *same = std::move(*row);
        dirs[same - rows.begin()] = t.dir;
      }
    }
  }
  std::sort(rows.begin(), rows.end(), [](const score::Row& a, const score::Row& b) {
    return std::tie(a.level, a.problem_id) < std::tie(b.level, b.problem_id);
  });
  if (output.has_parent_path()) fs::create_directories(output.parent_path(), ec);
  if (auto w = write_atomic(output, score::format_tsv(rows)); !w) return std::unexpected(w.error());
  return rows;
}

std::vector<std::string> task_command(const Options& o, const Task& t, bool resume,
                                      const fs::path& db) {
  std::vector<std::string> a = {o.binary.string(), "optimize", "--json", "--db", db.string()};
  auto add = [&a](std::string flag, std::string value) {
    a.push_back(std::move(flag));
    a.push_back(std::move(value));
  };
  if (resume) {
    add("--resume", t.session);
    if (o.iterations > 0) add("--iterations", std::to_string(o.iterations));
  } else {
    add("--session", t.session);
    add("--level", std::to_string(t.level));
    add("--problem", std::to_string(t.number));
    add("--kernelbench-dir", o.kernelbench_dir.string());
    add("--backend", o.backend);
    add("--model", o.model);
    add("--mode", o.mode);
    if (o.iterations > 0) add("--iterations", std::to_string(o.iterations));
    add("--out", t.dir.string());
    // Each problem its own seed, reproducible from the sweep's.
    add("--seed", std::to_string(o.seed + static_cast<uint64_t>(t.level) * 1000 + t.number));
    add("--trials", std::to_string(o.limits.trials));
    add("--timeout", fmt::format("{}", o.limits.timeout_s));
    add("--timing-budget", fmt::format("{}", o.limits.timing_budget_s));
    if (o.limits.threads > 0) add("--threads", std::to_string(o.limits.threads));
    if (!o.base_url.empty()) add("--base-url", o.base_url);
    if (o.limits.no_sandbox) a.push_back("--no-sandbox");
    if (!o.skills) a.push_back("--no-skills");
    if (o.prompt_budget_tokens > 0)
      add("--prompt-budget-tokens", std::to_string(o.prompt_budget_tokens));
    if (o.stop_at_sol) add("--stop-at-sol", fmt::format("{}", *o.stop_at_sol));
  }
  if (o.budget_usd) add("--budget-usd", fmt::format("{}", *o.budget_usd));
  if (!o.python.empty()) add("--python", o.python);
  return a;
}

util::Result<std::vector<Task>> plan(const Options& o) {
  if (o.level < 1) return fail(ErrorKind::kUsage, "--level must be 1 or more");
  auto chosen = problems::select_problems(o.kernelbench_dir, o.level, o.problems);
  if (!chosen) return std::unexpected(chosen.error());

  fs::path work = work_dir(o.output);
  std::error_code ec;
  fs::create_directories(work, ec);
  if (ec)
    return fail(ErrorKind::kBadInput,
                fmt::format("cannot create {}: {}", work.string(), ec.message()));
  std::vector<Task> tasks;
  for (const auto& p : *chosen) {
    Task t;
    t.level = o.level;
    t.number = p.number;
    t.name = p.name;
    t.reference = fs::absolute(p.path);
    t.dir = fs::absolute(work / task_dir_name(o.level, p.number, p.name));
    t.session = read_text(t.dir / kSession);
    tasks.push_back(std::move(t));
  }
  return tasks;
}

}  // namespace ok::sweep
