#include "optimize/session.hpp"

#include <fmt/core.h>

#include <chrono>

#include "eval/evaluator.hpp"
#include "eval/record.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"

namespace ok::optimize {

using nlohmann::json;
using util::ErrorKind;
using util::fail;

json Options::to_json() const {
  json j = {{"reference", reference},
            {"name", name},
            {"overrides", overrides},
            {"backend", backend},
            {"model", model},
            {"base_url", base_url},
            {"mode", mode},
            {"iterations", iterations},
            {"out_dir", out_dir.string()},
            {"seed", seed},
            {"threads", threads},
            {"timeout_s", timeout_s},
            {"trials", trials},
            {"timing_budget_s", timing_budget_s},
            {"no_sandbox", no_sandbox}};
  j["level"] = level ? json(*level) : json(nullptr);
  j["number"] = number ? json(*number) : json(nullptr);
  j["budget_usd"] = budget_usd ? json(*budget_usd) : json(nullptr);
  return j;
}

Options Options::from_json(const json& j) {
  Options o;
  o.reference = j.value("reference", "");
  o.name = j.value("name", "");
  if (j.contains("level") && j["level"].is_number()) o.level = j["level"].get<int>();
  if (j.contains("number") && j["number"].is_number()) o.number = j["number"].get<int>();
  o.overrides = j.value("overrides", std::map<std::string, std::string>{});
  o.backend = j.value("backend", "cpu");
  o.model = j.value("model", "builtin");
  o.base_url = j.value("base_url", "");
  o.mode = j.value("mode", "fast");
  o.iterations = j.value("iterations", 0);
  if (j.contains("budget_usd") && j["budget_usd"].is_number())
    o.budget_usd = j["budget_usd"].get<double>();
  o.out_dir = j.value("out_dir", "");
  o.seed = j.value("seed", uint64_t{0});
  o.threads = j.value("threads", 0);
  o.timeout_s = j.value("timeout_s", 300.0);
  o.trials = j.value("trials", 5);
  o.timing_budget_s = j.value("timing_budget_s", 4.0);
  o.no_sandbox = j.value("no_sandbox", false);
  return o;
}

int default_iterations(const std::string& mode) {
  return mode == "deep" ? 16 : 6;
}

std::string new_session_id() {
  return util::time_id("s");
}

store::SessionRow new_session_row(const std::string& id, const Options& o) {
  store::SessionRow row;
  row.id = id;
  row.reference = o.reference;
  row.name = o.name;
  row.backend = o.backend;
  row.model = o.model;
  row.mode = o.mode;
  row.status = "running";
  row.options_json = o.to_json().dump();
  row.out_dir = o.out_dir.string();
  return row;
}

util::Result<ProblemContext> prepare_problem(eval::Worker& worker, const Options& o) {
  ProblemContext p;
  p.reference_path = o.reference;
  p.name = o.name;
  p.backend = o.backend;
  auto src = util::read_file(o.reference);
  if (!src) return std::unexpected(src.error());
  p.source = *src;
  const auto limit = std::chrono::seconds(600);
  // FLOPs and bytes for the prompts. `inspect` runs the reference on the CPU at full size, which
  // costs seconds to minutes for big problems; the builtin generator does not need it, and the
  // evaluations report the same figures in their roofline.
  if (o.model != "builtin") {
    auto inspect = worker.call(
        {{"op", "inspect"}, {"reference", o.reference}, {"overrides", o.overrides}}, limit);
    if (!inspect) return std::unexpected(inspect.error());
    p.inspect = *inspect;
  } else {
    p.inspect = json::object();
  }
  auto graph = worker.call(
      {{"op", "analyze"}, {"reference", o.reference}, {"overrides", o.overrides}}, limit);
  if (!graph && graph.error().kind == ErrorKind::kBadInput) return std::unexpected(graph.error());
  // A graph that cannot be built is not fatal: an LLM does not need it, and the builtin
  // generator reports the problem unsupported with the reason.
  p.graph = graph ? *graph : json{{"traceable", false}, {"reason", graph.error().message}};
  auto device =
      worker.call({{"op", "device_info"}, {"device", o.backend == "cpu" ? "cpu" : "cuda"}}, limit);
  p.device = device ? *device : json{{"name", o.backend == "cpu" ? "CPU" : "GPU"}};
  return p;
}

std::vector<Attempt> attempts_from_rows(const std::vector<store::AttemptRow>& rows,
                                        store::Store* store) {
  std::vector<Attempt> out;
  for (const auto& r : rows) {
    Attempt a;
    a.number = r.number;
    a.generator = r.generator;
    a.path = r.path;
    a.verdict = r.verdict;
    a.correct = r.correct;
    a.speedup = r.speedup;
    a.runtime_us = r.runtime_us;
    a.error = r.error;
    a.cost_usd = r.cost_usd;
    a.params = json::parse(r.params_json, nullptr, false);
    if (a.params.is_discarded()) a.params = json::object();
    a.description = r.description;
    if (!r.diagnosis_json.empty()) a.diagnosis = json::parse(r.diagnosis_json, nullptr, false);
    if (a.diagnosis.is_discarded()) a.diagnosis = nullptr;
    a.wall_s = r.wall_s;
    a.evaluation_id = r.evaluation_id;
    if (store && a.evaluation_id) {
      auto text = store->evaluation_result(*a.evaluation_id);
      if (text && *text) {
        json result = json::parse(**text, nullptr, false);
        if (result.is_object()) a.summary = summarize_result(result);
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

namespace {

std::optional<double> median_of(const json& r, const char* key) {
  if (!r.contains(key)) return std::nullopt;
  const json& v = r[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_object() && v.contains("median") && v["median"].is_number())
    return v["median"].get<double>();
  return std::nullopt;
}

class Loop {
 public:
  Loop(std::string id, const Options& o, ProblemContext p, std::vector<Attempt> history,
       Dependencies d)
      : id_(std::move(id)), o_(o), p_(std::move(p)), d_(std::move(d)) {
    out_.session = id_;
    out_.attempts = std::move(history);
    out_.device = p_.device;
    for (size_t i = 0; i < out_.attempts.size(); ++i) consider_best(i);
    for (const auto& a : out_.attempts) resumed_cost_ += a.cost_usd;
  }

  util::Result<Outcome> run() {
    auto row = d_.store->find_session(id_);
    if (!row) return std::unexpected(row.error());
    if (!*row) return fail(ErrorKind::kInternal, "session " + id_ + " is not in the store");
    session_ = **row;
    if (session_.compile_runtime_us) out_.compile_runtime_us = session_.compile_runtime_us;
    const int total = o_.iterations > 0 ? o_.iterations : default_iterations(o_.mode);
    std::filesystem::create_directories(o_.out_dir / "attempts");
    emit("started", 0, total, fmt::format("{} on {} with {}", p_.name, o_.backend, o_.model));
    out_.stop_reason = "iterations";
    for (int n = static_cast<int>(out_.attempts.size()) + 1; n <= total; ++n) {
      if (cancelled()) {
        out_.stop_reason = "interrupted";
        break;
      }
      if (o_.budget_usd && spent() >= *o_.budget_usd) {
        out_.stop_reason = "budget";
        break;
      }
      auto stop = step(n, total);
      if (!stop) return std::unexpected(stop.error());
      if (!stop->empty()) {
        out_.stop_reason = *stop;
        break;
      }
    }
    out_.status = out_.stop_reason == "interrupted" ? "interrupted" : "finished";
    out_.cost_usd = spent();
    if (out_.best) {
      const Attempt& b = out_.attempts[*out_.best];
      out_.best_path = o_.out_dir / ("best_" + sanitize(p_.name) + ".py");
      if (auto src = util::read_file(b.path)) (void)util::write_file(out_.best_path, *src);
    }
    save_session(out_.status);
    emit("stopped", 0, total, out_.stop_reason);
    return out_;
  }

 private:
  // One attempt; returns a stop reason, or "" to continue.
  util::Result<std::string> step(int n, int total) {
    auto t0 = std::chrono::steady_clock::now();
    emit("generating", n, total, d_.generator->name());
    Generation g = d_.generator->next(p_, out_.attempts);
    if (g.source.empty() && g.error.empty()) return std::string("exhausted");
    if (!g.error.empty() && cancelled())
      return std::string("interrupted");  // not the model's fault
    Attempt a;
    a.number = n;
    a.generator = d_.generator->name();
    a.params = g.params;
    a.description = g.description;
    a.cost_usd = g.cost_usd;
    if (!g.error.empty()) {
      a.verdict = g.verdict.empty() ? "generation_failed" : g.verdict;
      a.error = g.error;
      a.wall_s = seconds_since(t0);
      if (auto r = record(a, std::nullopt); !r) return std::unexpected(r.error());
      if (g.exhausted) return std::string(a.verdict == "unsupported" ? "unsupported" : "exhausted");
      return std::string();
    }
    a.path = (o_.out_dir / "attempts" / fmt::format("attempt_{:03d}.py", n)).string();
    if (auto w = util::write_file(a.path, g.source); !w) return std::unexpected(w.error());
    emit("evaluating", n, total, a.description);
    eval::EvalRequest req;
    req.reference = o_.reference;
    req.candidate = a.path;
    req.backend = o_.backend;
    req.trials = o_.trials;
    req.timeout_s = o_.timeout_s;
    req.overrides = o_.overrides;
    req.threads = o_.threads;
    req.timing_budget_s = o_.timing_budget_s;
    req.cache_dir = d_.cache_dir;
    req.no_sandbox = o_.no_sandbox;
    // The torch.compile baseline once per session, on the GPU (docs/optimize.md).
    if (o_.backend != "cpu" && !out_.compile_runtime_us && !asked_compile_) {
      req.compile_baseline = true;
      asked_compile_ = true;
    }
    auto result = eval::evaluate(*d_.worker, req, d_.cancel);
    if (!result) {
      if (result.error().kind == ErrorKind::kCancelled) return std::string("interrupted");
      a.verdict = "evaluator_error";
      a.error = result.error().message;
      a.wall_s = seconds_since(t0);
      if (auto r = record(a, std::nullopt); !r) return std::unexpected(r.error());
      if (!d_.restart_worker) return std::string("error");
      auto w = d_.restart_worker();
      if (!w) {
        out_.error = "the evaluation worker could not be restarted: " + w.error().message;
        return std::string("error");
      }
      *d_.worker = std::move(*w);
      return std::string();
    }
    json& r = *result;
    a.verdict = r.value("verdict", "unknown");
    a.correct = r.value("correct", false) && r.value("valid", false);
    if (a.correct && r["speedup"].is_number()) a.speedup = r["speedup"].get<double>();
    a.runtime_us = median_of(r, "runtime_us");
    if (auto e = median_of(r, "ref_runtime_us"); e && a.correct) out_.eager_runtime_us = e;
    if (auto c = median_of(r, "compile_runtime_us")) out_.compile_runtime_us = c;
    a.error = failure_text(r);
    a.summary = summarize_result(r);
    r["versions"] = d_.worker->hello().value("versions", json::object());
    auto ids = eval::record_evaluation(*d_.store, {p_.name, o_.reference, o_.level, o_.number},
                                       a.path, r, id_);
    if (!ids) return std::unexpected(ids.error());
    a.evaluation_id = ids->evaluation_id;
    double critic_cost = 0;
    if (!cancelled()) a.diagnosis = d_.critic->diagnose(p_, a, r, critic_cost);
    a.cost_usd += critic_cost;
    a.wall_s = seconds_since(t0);
    if (auto rec = record(a, ids->candidate_id); !rec) return std::unexpected(rec.error());
    if (cancelled()) return std::string("interrupted");
    double sol = r.contains("roofline") && r["roofline"].is_object()
                     ? r["roofline"].value("fraction_of_speed_of_light", 0.0)
                     : 0.0;
    if (a.correct && sol >= kSpeedOfLightStop) return std::string("speed_of_light");
    if (g.exhausted) return std::string("exhausted");
    return std::string();
  }

  // Appends the attempt to the history and the store, then updates the session row.
  util::Result<void> record(Attempt a, std::optional<int64_t> candidate_id) {
    store::AttemptRow row;
    row.session = id_;
    row.number = a.number;
    row.generator = a.generator;
    row.candidate_id = candidate_id;
    row.evaluation_id = a.evaluation_id;
    row.path = a.path;
    row.verdict = a.verdict;
    row.correct = a.correct;
    row.speedup = a.speedup;
    row.runtime_us = a.runtime_us;
    row.error = a.error;
    row.cost_usd = a.cost_usd;
    row.params_json = a.params.dump();
    row.description = a.description;
    row.diagnosis_json = a.diagnosis.is_null() ? "" : a.diagnosis.dump();
    row.wall_s = a.wall_s;
    if (auto r = d_.store->insert_attempt(row); !r) return std::unexpected(r.error());
    out_.attempts.push_back(std::move(a));
    consider_best(out_.attempts.size() - 1);
    save_session("running");
    emit("attempt", out_.attempts.back().number, 0, "", &out_.attempts.back());
    return {};
  }

  void consider_best(size_t i) {
    const Attempt& a = out_.attempts[i];
    if (!a.correct || !a.speedup) return;
    if (!out_.best || *a.speedup > *out_.attempts[*out_.best].speedup) out_.best = i;
  }

  void save_session(const std::string& status) {
    session_.status = status;
    session_.cost_usd = spent();
    session_.compile_runtime_us = out_.compile_runtime_us;
    if (out_.best) {
      session_.best_attempt = out_.attempts[*out_.best].number;
      session_.best_speedup = out_.attempts[*out_.best].speedup;
    }
    if (auto r = d_.store->update_session(session_); !r)
      emit("warning", 0, 0, "the session row was not updated: " + r.error().message);
  }

  double spent() const {
    double total = 0;
    for (const auto& a : out_.attempts) total += a.cost_usd;
    if (d_.ledger) total = std::max(total, d_.ledger->totals().cost_usd + resumed_cost_);
    return total;
  }

  bool cancelled() const { return d_.cancel && d_.cancel->load(); }

  void emit(const char* kind, int n, int total, std::string text, const Attempt* a = nullptr) {
    if (!d_.observer) return;
    Event e;
    e.kind = kind;
    e.number = n;
    e.total = total;
    e.text = std::move(text);
    e.attempt = a;
    if (out_.best) e.best_speedup = out_.attempts[*out_.best].speedup;
    e.cost_usd = spent();
    d_.observer(e);
  }

  static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  static std::string sanitize(const std::string& s) {
    std::string out;
    for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    return out.empty() ? "kernel" : out;
  }

  std::string id_;
  Options o_;
  ProblemContext p_;
  Dependencies d_;
  Outcome out_;
  store::SessionRow session_;
  bool asked_compile_ = false;
  double resumed_cost_ = 0;
};

}  // namespace

util::Result<Outcome> run_session(const std::string& id, const Options& o, ProblemContext problem,
                                  std::vector<Attempt> resumed, Dependencies deps) {
  Loop loop(id, o, std::move(problem), std::move(resumed), std::move(deps));
  return loop.run();
}

}  // namespace ok::optimize
