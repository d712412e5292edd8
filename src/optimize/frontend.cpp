#include "optimize/frontend.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "llm/redact.hpp"
#include "optimize/prompts.hpp"
#include "optimize/report.hpp"
#include "util/paths.hpp"

namespace ok::optimize {

using nlohmann::json;
using util::ErrorKind;

util::Result<ResumedSession> resume_session(store::Store& store, const std::string& id,
                                            const ResumeChanges& changes) {
  auto row = store.find_session(id);
  if (!row) return std::unexpected(row.error());
  if (!*row)
    return util::fail(ErrorKind::kBadInput,
                      fmt::format("no session {} in {}", id, store.path().string()));
  json saved = json::parse((*row)->options_json, nullptr, false);
  if (saved.is_discarded())
    return util::fail(ErrorKind::kBadInput, "session " + id + " has unreadable options");
  ResumedSession r;
  r.options = Options::from_json(saved);
  if (changes.iterations > 0) r.options.iterations = changes.iterations;
  if (changes.budget_usd) r.options.budget_usd = changes.budget_usd;
  if (!changes.prebuild.empty()) r.options.prebuild = changes.prebuild;
  r.options.budget_wall_s = changes.budget_wall_s;
  r.options.budget_device_s = changes.budget_device_s;
  auto rows = store.attempts(id);
  if (!rows) return std::unexpected(rows.error());
  r.attempts = attempts_from_rows(*rows, &store);
  return r;
}

double spent_usd(const std::vector<Attempt>& attempts) {
  double c = 0;
  for (const auto& a : attempts) c += a.cost_usd;
  return c;
}

std::unique_ptr<Agents> Agents::make(const Options& o, const std::string& session,
                                     const std::optional<llm::Endpoint>& endpoint,
                                     const std::filesystem::path& db, double already_spent_usd,
                                     const Warn& warn) {
  const auto budget = o.budget_usd
                          ? std::optional<double>(std::max(0.0, *o.budget_usd - already_spent_usd))
                          : std::nullopt;
  std::unique_ptr<Agents> a(new Agents(budget));
  const auto skills = util::resource_root() / "data/skills";
  if (!endpoint) {
    // The whole template space: the search decides what to try in it.
    a->generator_ = make_builtin_generator(skills, o.seed, kMaxTemplatePoints);
    a->critic_ = make_heuristic_critic();
    return a;
  }
  const llm::Redactor redactor(endpoint->api_key);
  auto rec = llm::StoreRecorder::open(db, redactor);
  if (rec)
    a->recorder_ = std::move(*rec);
  else
    warn("model calls are not recorded: " + redactor.apply(rec.error().message));
  llm::ClientOptions copts;
  copts.ledger = &a->ledger_;
  copts.recorder = a->recorder_.get();
  a->client_ = std::make_unique<llm::Client>(*endpoint, copts);
  const PromptBudgets budgets =
      o.prompt_budget_tokens > 0
          ? PromptBudgets{}.scaled_to(static_cast<size_t>(o.prompt_budget_tokens))
          : PromptBudgets{};
  a->generator_ = make_llm_generator(*a->client_, prompts_dir(), skills, session, budgets);
  a->critic_ = make_llm_critic(*a->client_, prompts_dir(), session);
  return a;
}

bool prebuild_wanted(const Options& o) {
  return o.prebuild == "on" || (o.prebuild == "auto" && o.backend != "cpu");
}

util::Result<json> write_reports(const Options& o, const Outcome& outcome,
                                 const std::filesystem::path& db) {
  json report = report_json(o, outcome);
  report["db"] = db.string();
  report["report_md"] = (o.out_dir / "report.md").string();
  report["report_json"] = (o.out_dir / "report.json").string();
  if (auto w = util::write_file(o.out_dir / "report.md", report_markdown(report)); !w)
    return std::unexpected(w.error());
  if (auto w = util::write_file(o.out_dir / "report.json", report.dump(2) + "\n"); !w)
    return std::unexpected(w.error());
  return report;
}

}  // namespace ok::optimize
