#include "pyapi/options.hpp"

#include <fmt/core.h>

#include <initializer_list>
#include <set>

namespace ok::pyapi {

using nlohmann::json;
using util::ErrorKind;

namespace {

// Reads the arguments one by one; the first problem (a wrong type, a value outside its set, an
// argument nobody read) is kept and reported by finish().
class Reader {
 public:
  explicit Reader(const json& j) : j_(j) {
    if (!j_.is_object()) error_ = "the options must be a dict";
  }
  // Leaves `into` as it is when the argument is absent or None.
  template <class T>
  Reader& get(const char* key, T& into) {
    read_.insert(key);
    if (error_ || !j_.is_object() || !j_.contains(key) || j_[key].is_null()) return *this;
    const json& v = j_[key];
    bool ok = true;
    if constexpr (std::is_same_v<T, bool>) {
      ok = v.is_boolean();
    } else if constexpr (std::is_integral_v<T>) {
      ok = v.is_number_integer();
    } else if constexpr (std::is_floating_point_v<T>) {
      ok = v.is_number();
    } else if constexpr (std::is_same_v<T, std::string>) {
      ok = v.is_string();
    } else {
      ok = v.is_array() &&
           std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_string(); });
    }
    if (!ok) {
      error_ = fmt::format("{}: expected {}, got {}", key, type_name<T>(), v.dump());
      return *this;
    }
    into = v.get<T>();
    return *this;
  }
  // A string argument that must be one of `allowed`.
  Reader& one_of(const char* key, std::string& into, std::initializer_list<const char*> allowed) {
    get(key, into);
    if (error_ || !j_.contains(key) || j_[key].is_null()) return *this;
    std::string names;
    for (const char* a : allowed) {
      if (into == a) return *this;
      names += (names.empty() ? "" : ", ") + std::string(a);
    }
    error_ = fmt::format("{}: '{}' is not one of {}", key, into, names);
    return *this;
  }
  util::Result<void> finish() const {
    if (error_) return util::fail(ErrorKind::kUsage, *error_);
    for (const auto& [key, value] : j_.items())
      if (!read_.contains(key))
        return util::fail(ErrorKind::kUsage, fmt::format("unknown option '{}'", key));
    return {};
  }

 private:
  template <class T>
  static const char* type_name() {
    if constexpr (std::is_same_v<T, bool>) return "a bool";
    if constexpr (std::is_integral_v<T>) return "an int";
    if constexpr (std::is_floating_point_v<T>) return "a number";
    if constexpr (std::is_same_v<T, std::string>) return "a str";
    return "a list of str";
  }
  const json& j_;
  std::set<std::string, std::less<>> read_;
  std::optional<std::string> error_;
};

void read_problem(Reader& r, cli::ProblemOptions& p) {
  r.get("reference", p.reference)
      .get("level", p.level)
      .get("problem", p.problem)
      .get("kernelbench_dir", p.kernelbench_dir)
      .get("set", p.sets);
}

void read_limits(Reader& r, eval::Limits& l) {
  r.get("trials", l.trials)
      .get("timeout", l.timeout_s)
      .get("timing_budget", l.timing_budget_s)
      .get("threads", l.threads)
      .get("no_sandbox", l.no_sandbox);
}

template <class T>
util::Result<T> finished(const Reader& r, T value) {
  if (auto f = r.finish(); !f) return std::unexpected(f.error());
  return value;
}

}  // namespace

util::Result<EngineOptions> engine_options(const json& j) {
  EngineOptions o;
  Reader r(j);
  r.get("python", o.python).get("db", o.global.db).get("eval_host", o.eval_host);
  r.one_of("backend", o.backend, {"cpu", "cuda", "triton"});
  return finished(r, o);
}

util::Result<cli::EvaluateOptions> evaluate_options(const json& j) {
  cli::EvaluateOptions o;
  Reader r(j);
  read_problem(r, o.problem);
  read_limits(r, o.limits);
  r.get("candidate", o.candidate).get("device", o.device).get("seed", o.seed);
  r.get("strict", o.strict).get("compile_baseline", o.compile_baseline);
  r.one_of("cuda_graph", o.cuda_graph, {"auto", "on", "off"});
  r.one_of("rested", o.rested, {"auto", "on", "off"});
  r.one_of("profile", o.profile, {"basic", "proton", "deep"});  // profile::kTiers
  return finished(r, o);
}

util::Result<cli::OptimizeOptions> optimize_options(const json& j, cli::GlobalOptions& g) {
  cli::OptimizeOptions o;
  Reader r(j);
  read_problem(r, o.problem);
  read_limits(r, o.limits);
  r.get("model", o.llm.model).get("base_url", o.llm.base_url).get("budget_usd", o.llm.budget_usd);
  r.get("api_key_env", o.llm.api_key_env);
  r.one_of("backend", o.backend, {"cpu", "cuda", "triton"});
  r.one_of("mode", o.mode, {"fast", "deep"});
  r.one_of("search", o.search, {"engine", "best-of-n", "prior"});
  r.one_of("prebuild", o.prebuild, {"auto", "on", "off"});
  r.get("iterations", o.iterations).get("out", o.out).get("resume", o.resume);
  r.get("session", o.session_id).get("python", o.python).get("seed", o.seed);
  r.get("in_flight", o.in_flight).get("budget_wall_s", o.budget_wall_s);
  r.get("budget_device_s", o.budget_device_s).get("strategy", o.strategy);
  r.get("stop_at_sol", o.stop_at_sol).get("no_compile_baseline", o.no_compile_baseline);
  r.get("prompt_budget_tokens", o.prompt_budget_tokens).get("no_skills", o.no_skills);
  r.get("db", g.db).get("eval_host", o.eval_host);
  return finished(r, o);
}

util::Result<cli::SweepCliOptions> sweep_options(const json& j, cli::GlobalOptions& g) {
  cli::SweepCliOptions o;
  // eval_host: one host, or a list of them (--eval-host repeated).
  json args = j;
  if (args.is_object() && args.contains("eval_host") && args["eval_host"].is_string())
    args["eval_host"] = json::array({args["eval_host"]});
  Reader r(args);
  read_limits(r, o.limits);
  r.get("level", o.level).get("problems", o.problems).get("kernelbench_dir", o.kernelbench_dir);
  r.one_of("backend", o.backend, {"cpu", "cuda", "triton"});
  r.one_of("mode", o.mode, {"fast", "deep"});
  r.one_of("executor", o.executor, {"local", "slurm"});
  r.get("model", o.model).get("base_url", o.base_url).get("iterations", o.iterations);
  r.get("budget_usd", o.budget_usd).get("output", o.output).get("gpus", o.gpus);
  r.get("jobs", o.jobs).get("slurm_args", o.slurm_args).get("python", o.python);
  r.get("seed", o.seed).get("db", g.db).get("eval_host", o.eval_hosts);
  r.get("prompt_budget_tokens", o.prompt_budget_tokens).get("no_skills", o.no_skills);
  if (o.level < 1) return util::fail(ErrorKind::kUsage, "level: give a KernelBench level (1-4)");
  return finished(r, o);
}

util::Result<cli::ProblemOptions> problem_options(const json& j) {
  cli::ProblemOptions p;
  Reader r(j);
  read_problem(r, p);
  return finished(r, p);
}

}  // namespace ok::pyapi
