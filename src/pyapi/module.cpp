// openkernel._core: the extension module of the Python API (docs/python.md). The package
// python/openkernel wraps it with typed results; this file binds what needs no worker (score,
// reward, problems) and puts the pieces together.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "cli/context.hpp"
#include "problems/kernelbench.hpp"
#include "pyapi/bindings.hpp"
#include "pyapi/blocking.hpp"
#include "pyapi/options.hpp"
#include "score/report.hpp"
#include "score/reward.hpp"
#include "score/tsv.hpp"
#include "util/paths.hpp"

namespace ok::pyapi {

using nlohmann::json;

namespace {

// `score --json`'s object for a results TSV.
py::object score(const std::string& path) {
  auto rows = score::read_tsv(path);
  if (!rows) raise(rows.error());
  return to_python(score::score_json(*rows));
}

// score::reward: -1 rejected, 0 other failures, clip(ln speedup, -1, 3); None when correct
// without a speedup.
py::object reward(const std::string& verdict, std::optional<double> speedup) {
  auto r = score::reward(verdict, speedup);
  return r ? py::object(py::float_(*r)) : py::object(py::none());
}

template <class T>
T value_or_raise(util::Result<T> r) {
  if (!r) raise(r.error());
  return std::move(*r);
}

// A problem as `--reference` or `--level/--problem` resolve it: name, path, level, problem,
// overrides and the reference's source.
py::object load_problem(const py::dict& options) {
  auto p = value_or_raise(problem_options(from_python(options)));
  auto cfg = value_or_raise(config::load_default());
  auto r = value_or_raise(cli::resolve_problem(p, cfg));
  auto source = value_or_raise(util::read_file(r.path));
  json j = {{"name", r.name},
            {"path", r.path},
            {"level", r.level ? json(*r.level) : json(nullptr)},
            {"problem", r.number ? json(*r.number) : json(nullptr)},
            {"overrides", r.overrides},
            {"source", source}};
  return to_python(j);
}

// `problems list --json`'s array.
py::object list_problems(int level, const std::string& kernelbench_dir) {
  auto cfg = value_or_raise(config::load_default());
  auto dir = value_or_raise(cli::kernelbench_dir(kernelbench_dir, cfg));
  auto all = value_or_raise(problems::list_level(dir, level));
  json arr = json::array();
  for (const auto& p : all)
    arr.push_back(
        {{"level", p.level}, {"problem", p.number}, {"name", p.name}, {"path", p.path.string()}});
  return to_python(arr);
}

}  // namespace

}  // namespace ok::pyapi

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  namespace pyapi = ok::pyapi;
  m.doc() = "OpenKernel's engine (wrapped by the openkernel package; docs/python.md)";
  pyapi::init_errors(m);
  m.def("score", &pyapi::score, py::arg("path"));
  m.def("reward", &pyapi::reward, py::arg("verdict"), py::arg("speedup") = py::none());
  m.def("load_problem", &pyapi::load_problem, py::arg("options"));
  m.def("list_problems", &pyapi::list_problems, py::arg("level"), py::arg("kernelbench_dir") = "");
  m.attr("REWARD_REJECTED") = ok::score::kRewardRejected;
  m.attr("REWARD_MIN") = ok::score::kRewardMin;
  m.attr("REWARD_MAX") = ok::score::kRewardMax;
  m.attr("RESOURCE_ROOT") = ok::util::resource_root().string();
  pyapi::bind_evaluator(m);
  pyapi::bind_sessions(m);
}
