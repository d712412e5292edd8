#include "sweep/baseline.hpp"

#include <chrono>
#include <filesystem>

namespace ok::sweep {

using nlohmann::json;

namespace {

json median(const json& series) {
  return series.is_object() ? series.value("median", json(nullptr)) : json(nullptr);
}

json request(const problems::ProblemRef& p, const BaselineOptions& o) {
  return {{"op", "baseline"},
          {"reference", std::filesystem::absolute(p.path).string()},
          {"backend", o.backend},
          {"timing_budget_s", o.timing_budget_s},
          {"threads", o.threads},
          {"cuda_graph", o.cuda_graph},
          {"rested", o.rested},
          {"compile", o.compile},
          {"seed", 0}};
}

// Fills `row` from the worker's reply and stores the baseline under its problem.
util::Result<void> record(const problems::ProblemRef& p, const BaselineOptions& o, const json& res,
                          json& row, store::Store& store) {
  row["eager_us"] = median(res.value("eager_runtime_us", json(nullptr)));
  row["compile_us"] = median(res.value("compile_runtime_us", json(nullptr)));
  row["method"] = res.value("method", "");
  row["device"] = res.value("device_name", "");
  const json& comp = res.value("compile", json::object());
  row["compile_reason"] = comp.is_object() ? comp.value("reason", json(nullptr)) : nullptr;
  const json& prob = res.value("problem", json::object());
  auto pid = store.upsert_problem({prob.value("source_hash", ""), p.name, p.path.string(), p.level,
                                   p.number, prob.value("source", "")});
  if (!pid) return std::unexpected(pid.error());
  store::BaselineRow b;
  b.problem_id = *pid;
  b.device = row["device"].get<std::string>();
  b.backend = o.backend;
  b.method = row["method"].get<std::string>();
  if (row["eager_us"].is_number()) b.eager_us = row["eager_us"].get<double>();
  if (row["compile_us"].is_number()) b.compile_us = row["compile_us"].get<double>();
  if (row["compile_reason"].is_string())
    b.compile_reason = row["compile_reason"].get<std::string>();
  b.threads = res.value("threads", 0);
  b.versions_json = res.value("versions", json::object()).dump();
  b.result_json = res.dump();
  if (auto id = store.insert_baseline(b); !id) return std::unexpected(id.error());
  return {};
}

}  // namespace

util::Result<BaselineOutcome> run_baseline(const std::vector<problems::ProblemRef>& problems,
                                           const BaselineOptions& o, eval::Worker& worker,
                                           const StartWorker& restart, store::Store& store,
                                           const std::atomic<bool>* cancel,
                                           const BaselineObserver& observer) {
  BaselineOutcome out;
  for (const auto& p : problems) {
    if (cancel && cancel->load()) break;
    auto r = worker.call(request(p, o), std::chrono::seconds(1800), cancel);
    json row = {{"level", p.level}, {"problem_id", p.number}, {"name", p.name}};
    if (!r) {
      if (r.error().kind == util::ErrorKind::kCancelled) break;
      ++out.failed;
      row["error"] = r.error().message;
      if (!worker.alive()) {
        auto w = restart();
        if (!w) return std::unexpected(w.error());
        worker = std::move(*w);
      }
    } else if (auto rec = record(p, o, *r, row, store); !rec) {
      return std::unexpected(rec.error());
    }
    if (observer) observer(p, row);
    out.rows.push_back(std::move(row));
  }
  out.interrupted = cancel && cancel->load();
  return out;
}

}  // namespace ok::sweep
