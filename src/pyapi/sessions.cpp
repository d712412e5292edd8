// openkernel._core.optimize and .sweep: `openkernel optimize` and `openkernel sweep` through the
// CLI's own runs (cli::optimize_session, cli::sweep_session) with a Python front end: the engine's
// events, rendered as the store's event rows (optimize::RowObserver), and the sweep's progress go
// to a Python callable as they happen, called with the GIL from the engine's threads. A callable
// that raises stops the run as Ctrl-C does (the session stays resumable) and its exception is
// raised once the run has ended.
#include <mutex>
#include <optional>

#include "pyapi/bindings.hpp"
#include "pyapi/blocking.hpp"
#include "pyapi/options.hpp"

namespace ok::pyapi {

using nlohmann::json;

namespace {

// Calls a Python callable with JSON values from any thread; the first exception it raises sets
// `cancel` and is kept for rethrow(). Without a callable, warnings go to Python's warnings module.
class Callback {
 public:
  Callback(py::object fn, std::atomic<bool>& cancel) : fn_(std::move(fn)), cancel_(cancel) {}

  void call(const json& value) {
    std::lock_guard lock(mu_);  // one call at a time, in the order the engine told them
    if (failed_) return;
    py::gil_scoped_acquire gil;
    try {
      if (!fn_.is_none()) {
        fn_(to_python(value));
      } else if (value.value("kind", "") == "warning") {
        py::module_::import("warnings")
            .attr("warn")(value.value("text", ""),
                          py::module_::import("builtins").attr("RuntimeWarning"));
      }
    } catch (py::error_already_set& e) {
      failed_.emplace(std::move(e));
      cancel_.store(true);
    }
  }

  // Runs `run` (with the GIL held) and then raises the callable's exception, if it raised one,
  // in place of what `run` returned or raised.
  template <class F>
  json guard(F&& run) {
    json out;
    try {
      out = run();
    } catch (py::error_already_set&) {
      rethrow();
      throw;
    }
    rethrow();
    return out;
  }

 private:
  py::object fn_;
  std::atomic<bool>& cancel_;
  std::mutex mu_;
  std::optional<py::error_already_set> failed_;

  void rethrow() {
    if (!failed_) return;
    py::error_already_set e = std::move(*failed_);
    failed_.reset();
    throw e;
  }
};

// The engine's events as the store's rows, without the session and the id and time the store
// adds: {kind, number, total, text, payload}.
class EventForwarder final : public optimize::RowObserver {
 public:
  explicit EventForwarder(Callback& cb) : cb_(cb) {}

 protected:
  void append(store::EventRow row) override {
    json payload = json::parse(row.payload_json, nullptr, false);
    cb_.call({{"kind", row.kind},
              {"number", row.number},
              {"total", row.total},
              {"text", row.text},
              {"payload", payload.is_discarded() ? json::object() : payload}});
  }

 private:
  Callback& cb_;
};

json optional_number(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

// A results row as its TSV columns (docs/tsv.md).
json row_json(const score::Row& r) {
  return {{"level", r.level},
          {"problem_id", r.problem_id},
          {"name", r.name},
          {"backend", r.backend},
          {"model", r.model},
          {"correct", r.correct},
          {"runtime_us", optional_number(r.runtime_us)},
          {"eager_us", optional_number(r.eager_us)},
          {"compile_us", optional_number(r.compile_us)},
          {"speedup_eager", optional_number(r.speedup_eager)},
          {"speedup_compile", optional_number(r.speedup_compile)},
          {"attempts", r.attempts ? json(*r.attempts) : json(nullptr)},
          {"cost_usd", optional_number(r.cost_usd)},
          {"verdict", r.verdict},
          {"flags", r.flags},
          {"device", r.device}};
}

// A sweep's progress (sweep::Progress) as a dict.
json progress_json(const sweep::Progress& p) {
  json j = {{"kind", p.kind},     {"slot", p.slot},
            {"text", p.text},     {"done", p.done},
            {"total", p.total},   {"running", p.running},
            {"fast_1", p.fast_1}, {"scored", p.scored},
            {"wall_s", p.wall_s}, {"eta_s", p.eta_s >= 0 ? json(p.eta_s) : json(nullptr)}};
  j["task"] = p.task ? json{{"level", p.task->level},
                            {"number", p.task->number},
                            {"name", p.task->name},
                            {"dir", p.task->dir.string()},
                            {"session", p.task->session}}
                     : json(nullptr);
  j["row"] = p.row ? row_json(*p.row) : json(nullptr);
  return j;
}

py::object optimize(const py::dict& options, py::object on_event) {
  cli::GlobalOptions g;
  auto o = optimize_options(from_python(options), g);
  if (!o) raise(o.error());
  std::atomic<bool> cancel{false};
  Callback cb(std::move(on_event), cancel);
  EventForwarder events(cb);
  cli::FrontEnd fe;
  fe.observer = &events;
  fe.quiet = true;
  fe.print_report = false;
  fe.handle_interrupt = false;
  fe.cancel = &cancel;
  json report = cb.guard([&] {
    return run_blocking(cancel, [&]() -> util::Result<json> {
      auto run = cli::optimize_session(g, *o, fe);
      if (!run) return std::unexpected(run.error());
      return std::move(run->report);
    });
  });
  return to_python(report);
}

py::object sweep(const py::dict& options, py::object on_event, const std::string& binary) {
  cli::GlobalOptions g;
  g.quiet = true;
  auto o = sweep_options(from_python(options), g);
  if (!o) raise(o.error());
  std::atomic<bool> cancel{false};
  Callback cb(std::move(on_event), cancel);
  cli::SweepHooks hooks;
  hooks.cancel = &cancel;
  hooks.observer = [&cb](const sweep::Progress& p) { cb.call(progress_json(p)); };
  hooks.binary = binary.empty() ? std::string(OPENKERNEL_BINARY) : binary;
  json summary = cb.guard([&] {
    return run_blocking(cancel, [&]() -> util::Result<json> {
      auto done = cli::sweep_session(g, *o, hooks);
      if (!done) return std::unexpected(done.error());
      return cli::sweep_summary_json(*done);
    });
  });
  return to_python(summary);
}

}  // namespace

void bind_sessions(py::module_& m) {
  m.def("optimize", &optimize, py::arg("options"), py::arg("on_event") = py::none());
  m.def("sweep", &sweep, py::arg("options"), py::arg("on_event") = py::none(),
        py::arg("binary") = "");
  m.attr("OPENKERNEL_BINARY") = OPENKERNEL_BINARY;
}

}  // namespace ok::pyapi
