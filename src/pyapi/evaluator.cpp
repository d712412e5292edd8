// openkernel._core.Evaluator: a long-lived engine (the store, a started worker and the backend)
// that evaluates candidates through `openkernel evaluate`'s own path (cli::prepare_evaluation and
// cli::evaluate_recorded), with the worker kept warm between calls and, for a warm Evaluator, a
// spare candidate process started ahead of each next evaluation (docs/evaluation.md,
// "Throughput"). Thread-safe: a mutex serialises evaluations on the one worker; the GIL is
// released while one runs. A worker that died or was stopped by Ctrl-C is restarted on the next
// call.
#include <mutex>
#include <optional>

#include "cli/evaluate_command.hpp"
#include "llm/types.hpp"
#include "pyapi/bindings.hpp"
#include "pyapi/blocking.hpp"
#include "pyapi/options.hpp"

namespace ok::pyapi {

using nlohmann::json;

namespace {

class Evaluator {
 public:
  // `options`: python, backend, db (engine_options); `warm`: more evaluations follow each one.
  Evaluator(const json& options, bool warm) : warm_(warm) {
    auto o = engine_options(options);
    if (!o) raise(o.error());
    options_ = std::move(*o);
    std::atomic<bool> cancel{false};
    run_blocking(cancel, [this]() -> util::Result<json> {
      std::lock_guard lock(mu_);
      if (auto e = ensure_engine(); !e) return std::unexpected(e.error());
      return json();
    });
  }

  json evaluate(const json& request) {
    auto o = evaluate_options(request);
    if (!o) raise(o.error());
    std::atomic<bool> cancel{false};
    return run_blocking(cancel, [&] { return evaluate_one(*o, cancel); });
  }

  // One result per request, in order; a request that failed gets {"error": {kind, message,
  // exit_code}} instead (the Python side raises it or returns it). Ctrl-C stops the batch.
  json evaluate_many(const json& requests) {
    if (!requests.is_array()) raise({util::ErrorKind::kUsage, "evaluate_many takes a list"});
    std::vector<util::Result<cli::EvaluateOptions>> parsed;
    for (const auto& r : requests) parsed.push_back(evaluate_options(r));
    std::atomic<bool> cancel{false};
    return run_blocking(cancel, [&]() -> util::Result<json> {
      json out = json::array();
      for (const auto& o : parsed) {
        auto r = o ? evaluate_one(*o, cancel) : util::Result<json>(std::unexpected(o.error()));
        if (!r && r.error().kind == util::ErrorKind::kCancelled) return r;
        out.push_back(r ? std::move(*r) : error_json(r.error()));
      }
      return out;
    });
  }

  // What the engine runs on: backend, the worker's greeting (python, versions, device), db.
  json info() {
    std::lock_guard lock(mu_);
    if (!engine_) return json{{"closed", true}};
    return json{{"backend", engine_->backend},
                {"worker", engine_->worker.hello()},
                {"worker_alive", engine_->worker.alive()},
                {"db", engine_->store.path().string()},
                {"closed", false}};
  }

  // Stops the worker (and its spare process); a later evaluation starts a new one.
  void close() {
    py::gil_scoped_release release;
    std::lock_guard lock(mu_);
    engine_.reset();
  }

 private:
  static json error_json(const util::Error& e) {
    return json{{"error",
                 {{"kind", std::string(llm::error_kind_name(e.kind))},
                  {"message", e.message},
                  {"exit_code", util::exit_code(e)}}}};
  }

  // The config file, read once. Holds mu_.
  util::Result<void> ensure_config() {
    if (config_) return {};
    auto cfg = config::load_default();
    if (!cfg) return std::unexpected(cfg.error());
    config_ = std::move(*cfg);
    return {};
  }

  // The engine, started on first use and its worker restarted when it died. Holds mu_.
  util::Result<void> ensure_engine() {
    if (auto c = ensure_config(); !c) return c;
    if (!engine_) {
      auto e = cli::start_engine(options_.global, *config_, options_.python, options_.backend,
                                 "cuda", options_.eval_host);
      if (!e) return std::unexpected(e.error());
      engine_.emplace(std::move(*e));
    } else if (!engine_->worker.alive()) {
      auto w = cli::start_worker(*config_, options_.python, {}, options_.eval_host);
      if (!w) return std::unexpected(w.error());
      engine_->worker = std::move(*w);
    }
    return {};
  }

  util::Result<json> evaluate_one(const cli::EvaluateOptions& o, const std::atomic<bool>& cancel) {
    std::lock_guard lock(mu_);
    if (auto c = ensure_config(); !c) return std::unexpected(c.error());
    auto problem = cli::prepare_evaluation(o, *config_);
    if (!problem) return std::unexpected(problem.error());
    if (auto e = ensure_engine(); !e) return std::unexpected(e.error());
    return cli::evaluate_recorded(*engine_, o, *problem, {&cancel, warm_});
  }

  const bool warm_;
  EngineOptions options_;
  std::mutex mu_;  // one evaluation at a time on the one worker
  std::optional<config::Config> config_;
  std::optional<cli::Engine> engine_;
};

}  // namespace

void bind_evaluator(py::module_& m) {
  py::class_<Evaluator>(m, "Evaluator")
      .def(py::init([](const py::dict& options, bool warm) {
             return std::make_unique<Evaluator>(from_python(options), warm);
           }),
           py::arg("options"), py::arg("warm") = true)
      .def(
          "evaluate",
          [](Evaluator& e, const py::dict& request) {
            return to_python(e.evaluate(from_python(request)));
          },
          py::arg("request"))
      .def(
          "evaluate_many",
          [](Evaluator& e, const py::list& requests) {
            return to_python(e.evaluate_many(from_python(requests)));
          },
          py::arg("requests"))
      .def("info", [](Evaluator& e) { return to_python(e.info()); })
      .def("close", &Evaluator::close);
}

}  // namespace ok::pyapi
