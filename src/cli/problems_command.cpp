// `openkernel problems list|show`: browse KernelBench and inspect a reference.
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "problems/kernelbench.hpp"

namespace ok::cli {

using nlohmann::json;

namespace {

struct ProblemsOptions {
  ProblemOptions problem;
  bool json = false;
  std::string python;
};

std::string human_count(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}{}", v, prefixes[i], unit);
}

int run_list(const ProblemsOptions& o) {
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  if (o.problem.level == 0)
    return report_error({util::ErrorKind::kUsage, "problems list needs --level L"});
  auto dir = kernelbench_dir(o.problem.kernelbench_dir, *cfg);
  if (!dir) return report_error(dir.error());
  auto all = problems::list_level(*dir, o.problem.level);
  if (!all) return report_error(all.error());
  if (o.json) {
    json arr = json::array();
    for (const auto& p : *all)
      arr.push_back(
          {{"level", p.level}, {"problem", p.number}, {"name", p.name}, {"path", p.path.string()}});
    fmt::print("{}\n", arr.dump());
    return 0;
  }
  for (const auto& p : *all) fmt::print("{:>4}  {}\n", p.number, p.name);
  fmt::print("{} problems in level {}\n", all->size(), o.problem.level);
  return 0;
}

int run_show(const ProblemsOptions& o) {
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  auto prob = resolve_problem(o.problem, *cfg);
  if (!prob) return report_error(prob.error());
  auto worker = start_worker(*cfg, o.python);
  if (!worker) return report_error(worker.error());
  auto r =
      worker->call({{"op", "inspect"}, {"reference", prob->path}, {"overrides", prob->overrides}},
                   std::chrono::seconds(600));
  if (!r) return report_error(r.error());
  if (prob->level) (*r)["level"] = *prob->level;
  if (prob->number) (*r)["problem"] = *prob->number;
  (*r)["name"] = prob->name;
  if (o.json) {
    fmt::print("{}\n", r->dump());
    return 0;
  }
  fmt::print("name      {}\n", prob->name);
  fmt::print("path      {}\n", prob->path);
  auto shape = [](const json& v) {
    if (!v.contains("shape")) return v.value("value", std::string("?"));
    std::string s;
    for (const auto& d : v["shape"])
      s += (s.empty() ? "" : ", ") + std::to_string(d.get<long long>());
    return fmt::format("[{}] {}", s, v.value("dtype", ""));
  };
  for (const auto& v : (*r)["inputs"]) fmt::print("input     {}\n", shape(v));
  for (const auto& v : (*r)["outputs"]) fmt::print("output    {}\n", shape(v));
  fmt::print("flops     {}\n", human_count((*r)["flops"].get<double>(), "FLOP"));
  fmt::print("bytes     {} (inputs, parameters and outputs once)\n",
             human_count((*r)["bytes"].get<double>(), "B"));
  if ((*r)["arithmetic_intensity"].is_number())
    fmt::print("intensity {:.3g} FLOP/byte\n", (*r)["arithmetic_intensity"].get<double>());
  return 0;
}

}  // namespace

void add_problems_command(CLI::App& app, GlobalOptions&, Action& action) {
  auto o = std::make_shared<ProblemsOptions>();
  auto* cmd = app.add_subcommand("problems", "List and inspect KernelBench problems");
  cmd->require_subcommand(1);
  auto* list = cmd->add_subcommand("list", "List the problems of a level");
  list->add_option("--level", o->problem.level, "KernelBench level")->required();
  list->add_option("--kernelbench-dir", o->problem.kernelbench_dir, "KernelBench directory");
  list->add_flag("--json", o->json, "Print JSON");
  list->callback([&action, o] { action = [o] { return run_list(*o); }; });
  auto* show = cmd->add_subcommand("show", "Shapes, dtypes, FLOPs and bytes of a problem");
  add_problem_options(show, o->problem);
  show->add_flag("--json", o->json, "Print JSON");
  add_python_option(show, o->python);
  show->callback([&action, o] { action = [o] { return run_show(*o); }; });
}

}  // namespace ok::cli
