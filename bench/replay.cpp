#include "replay.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "util/strings.hpp"

namespace ok::bench {

using nlohmann::json;

namespace {

std::unexpected<util::Error> bad(std::string why) {
  return util::fail(util::ErrorKind::kBadInput, std::move(why));
}

// The device an evaluation ran on (its result's "device_name", else its "device").
std::string device_of(store::Store& st, int64_t evaluation) {
  auto r = st.evaluation_result(evaluation);
  if (!r || !*r) return "";
  json j = json::parse(**r, nullptr, false);
  if (!j.is_object()) return "";
  if (j.contains("device_name") && j["device_name"].is_string()) return j["device_name"];
  return j.value("device", std::string());
}

}  // namespace

// Every correct point's speedup against the median of the session's reference times.
void use_common_reference(Landscape& l) {
  std::vector<double> refs;
  for (const auto& a : l.points)
    if (a.correct && a.speedup && a.runtime_us && *a.runtime_us > 0)
      refs.push_back(*a.speedup * *a.runtime_us);
  if (refs.empty()) return;
  std::sort(refs.begin(), refs.end());
  const size_t n = refs.size();
  const double ref = n % 2 ? refs[n / 2] : (refs[n / 2 - 1] + refs[n / 2]) / 2;
  l.optimum = 0;
  for (auto& a : l.points) {
    if (a.correct && a.speedup && a.runtime_us && *a.runtime_us > 0)
      a.speedup = ref / *a.runtime_us;
    if (a.correct && a.speedup) l.optimum = std::max(l.optimum, *a.speedup);
  }
}

util::Result<std::vector<Landscape>> load_landscapes(const std::vector<std::string>& dbs,
                                                     const std::vector<std::string>& sessions,
                                                     bool common_reference) {
  std::vector<store::Store> stores;
  for (const auto& db : dbs) {
    auto st = store::Store::open(db);
    if (!st) return std::unexpected(st.error());
    stores.push_back(std::move(*st));
  }
  std::vector<Landscape> ls;
  for (const auto& s : sessions) {
    store::Store* st = nullptr;
    for (auto& candidate : stores) {
      auto found = candidate.find_session(s);
      if (found && *found) {
        st = &candidate;
        break;
      }
    }
    if (!st) return bad("no session " + s + " in " + util::join(dbs, ", "));
    auto row = st->find_session(s);
    auto rows = st->attempts(s);
    if (!row || !*row || !rows) return bad("cannot read session " + s);
    Landscape l;
    l.session = s;
    l.problem = (*row)->name;
    l.backend = (*row)->backend;
    auto attempts = optimize::attempts_from_rows(*rows);
    std::vector<json> params;
    for (auto& a : attempts) {
      if (!a.evaluation_id || !a.params.is_object()) continue;  // only measured points
      json p = a.params;
      p.erase("intent");
      params.push_back(p);
      if (l.device.empty()) l.device = device_of(*st, *a.evaluation_id);
      l.points.push_back(a);
      if (a.correct && a.speedup) l.optimum = std::max(l.optimum, *a.speedup);
    }
    if (l.points.empty()) return bad("session " + s + " has no measured template point");
    l.problem_class = params.front().value("pattern", std::string("other"));
    if (auto sig = st->search_state(s, "signature"); sig && *sig)
      l.signature = json::parse(**sig, nullptr, false);
    l.space = search::TemplateSpace(params);
    l.params = std::move(params);
    if (common_reference) use_common_reference(l);
    ls.push_back(std::move(l));
  }
  return ls;
}

Landscape reordered(const Landscape& l, const std::vector<size_t>& order) {
  Landscape out = l;
  out.params.clear();
  out.points.clear();
  for (size_t i : order) {
    out.params.push_back(l.params[i]);
    out.points.push_back(l.points[i]);
  }
  out.space = search::TemplateSpace(out.params);
  return out;
}

// One search of one problem with `budget` evaluations.
Run search_one(const Landscape& l, search::Policy policy, const search::SearchParams& params,
               uint64_t seed, int budget, std::vector<std::string>* failures, bool trace,
               const std::vector<search::SeedIntent>& seeds) {
  search::Planner planner(policy, params, l.space, seed, l.problem);
  planner.seed(seeds);
  Run r;
  for (int n = 1; n <= budget; ++n) {
    auto d = planner.next();
    if (!d || !d->point) break;
    optimize::Attempt a = l.points[*d->point];
    a.number = n;
    auto o = optimize::observation_of(a, l.space);
    o.point = d->point;
    planner.observe(*d, o);
    if (trace)
      fmt::print("    {:>2}  {:<10} {:>7}  {}\n", n, a.correct ? "correct" : a.verdict,
                 a.speedup ? fmt::format("{:.3f}x", *a.speedup) : "-", d->title);
    if (a.correct && a.speedup && *a.speedup > r.best) {
      r.best = *a.speedup;
      r.correct = true;
      r.to_best = n;
    }
  }
  if (failures)
    for (const auto& i : planner.intents()) {
      if (i.status == "failed" || i.status == "pruned")
        failures->push_back(i.note.rfind("no gain", 0) == 0 ? "no_gain" : i.note);
    }
  return r;
}

}  // namespace ok::bench
