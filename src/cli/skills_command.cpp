// `openkernel skills list|show|export|import|prune`: the skill library in the store
// (docs/skills.md). list, show and export load the seed skills first (a fresh store has them).
// import checks the whole file before it writes anything. Exit codes: 0; 2 for a missing,
// malformed or foreign-version file, an unknown skill id, a bad --min-confidence; 1 internal.
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/context.hpp"
#include "skills/library.hpp"
#include "util/paths.hpp"

namespace ok::cli {

namespace {

using nlohmann::json;
using util::ErrorKind;

struct SkillsOptions {
  std::string id, file, out;
  double min_confidence = 0.25;
  bool json = false;
};

// The store with its seed skills in place.
util::Result<store::Store> open_library(const GlobalOptions& g) {
  auto cfg = config::load_default();
  if (!cfg) return std::unexpected(cfg.error());
  auto st = open_store(g, *cfg);
  if (!st) return std::unexpected(st.error());
  if (auto s = skills::ensure_seeds(*st, util::resource_root() / "data/skills"); !s)
    return std::unexpected(s.error());
  return st;
}

json summary(const skills::Skill& s) {
  json j = s.to_json(false);
  j["helped"] = s.helped();
  j["failed"] = s.failed();
  j["confidence"] = s.confidence();
  j["evidence"] = s.evidence.size();
  return j;
}

int run_list(const GlobalOptions& g, const SkillsOptions& o) {
  auto st = open_library(g);
  if (!st) return report_error(st.error());
  auto all = skills::load(*st);
  if (!all) return report_error(all.error());
  if (o.json) {
    json list = json::array();
    for (const auto& s : *all) list.push_back(summary(s));
    fmt::print("{}\n", json{{"skills", list}}.dump(2));
    return 0;
  }
  fmt::print("{} skills in {}\n", all->size(), st->path().string());
  fmt::print("{:<19}  {:<7} {:<7} {:<6} {:>5} {:>6}  {}\n", "id", "kind", "from", "conf", "helped",
             "failed", "title");
  for (const auto& s : *all)
    fmt::print("{:<19}  {:<7} {:<7} {:<6.2f} {:>5} {:>6}  {}\n", s.id, s.kind, s.provenance,
               s.confidence(), s.helped(), s.failed(), s.title);
  return 0;
}

int run_show(const GlobalOptions& g, const SkillsOptions& o) {
  auto st = open_library(g);
  if (!st) return report_error(st.error());
  auto s = skills::find(*st, o.id);
  if (!s) return report_error(s.error());
  if (o.json) {
    fmt::print("{}\n", s->to_json(true).dump(2));
    return 0;
  }
  fmt::print("{}  {} skill ({}), confidence {:.2f}: helped {}, failed {}\n{}\n\n{}\n\n", s->id,
             s->kind, s->provenance, s->confidence(), s->helped(), s->failed(), s->title, s->text);
  fmt::print("applies to: {}\naction: {}\n", s->signature.to_json().dump(), s->action.dump(2));
  fmt::print("evidence ({}):\n", s->evidence.size());
  for (const auto& e : s->evidence)
    fmt::print("  {} {:<6} {:<8} attempt {} speedup {} -> {} {}\n", e.session, e.role, e.outcome,
               e.attempt ? std::to_string(*e.attempt) : "-",
               e.speedup_before ? fmt::format("{:.3f}x", *e.speedup_before) : "-",
               e.speedup_after ? fmt::format("{:.3f}x", *e.speedup_after) : "-", e.hardware);
  return 0;
}

int run_export(const GlobalOptions& g, const SkillsOptions& o) {
  auto st = open_library(g);
  if (!st) return report_error(st.error());
  auto all = skills::load(*st);
  if (!all) return report_error(all.error());
  if (auto w = util::write_file(o.out, skills::export_json(*all).dump(2) + "\n"); !w)
    return report_error(w.error());
  fmt::print("exported {} skills to {}\n", all->size(), o.out);
  return 0;
}

int run_import(const GlobalOptions& g, const SkillsOptions& o) {
  auto text = util::read_file(o.file);
  if (!text) return report_error({ErrorKind::kBadInput, "cannot read the skills file " + o.file});
  json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded())
    return report_error({ErrorKind::kBadInput, "the skills file " + o.file + " is not JSON"});
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  auto st = open_store(g, *cfg);
  if (!st) return report_error(st.error());
  auto r = skills::import_json(*st, doc);
  if (!r) return report_error({r.error().kind, o.file + ": " + r.error().message});
  if (o.json)
    fmt::print("{}\n",
               json{{"skills", r->skills}, {"added", r->added}, {"evidence", r->evidence}}.dump(2));
  else
    fmt::print("imported {} skills from {} ({} new, {} evidence rows)\n", r->skills, o.file,
               r->added, r->evidence);
  return 0;
}

int run_prune(const GlobalOptions& g, const SkillsOptions& o) {
  if (o.min_confidence < 0 || o.min_confidence > 1)
    return report_error({ErrorKind::kUsage, "--min-confidence must be within 0..1"});
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  auto st = open_store(g, *cfg);
  if (!st) return report_error(st.error());
  auto gone = skills::prune(*st, o.min_confidence);
  if (!gone) return report_error(gone.error());
  if (o.json) {
    json ids = json::array();
    for (const auto& s : *gone) ids.push_back(s.id);
    fmt::print("{}\n", json{{"removed", ids}, {"min_confidence", o.min_confidence}}.dump(2));
    return 0;
  }
  fmt::print("removed {} skills below confidence {:.2f}\n", gone->size(), o.min_confidence);
  for (const auto& s : *gone) fmt::print("  {} {:.2f} {}\n", s.id, s.confidence(), s.title);
  return 0;
}

}  // namespace

void add_skills_command(CLI::App& app, GlobalOptions& g, Action& action) {
  auto o = std::make_shared<SkillsOptions>();
  auto* cmd = app.add_subcommand("skills", "The skill library: list, show, export, import, prune");
  cmd->require_subcommand(1);
  auto sub = [&](const char* name, const char* help,
                 int (*run)(const GlobalOptions&, const SkillsOptions&)) {
    auto* c = cmd->add_subcommand(name, help);
    c->add_option("--db", g.db, "Store database");
    c->callback([&g, &action, o, run] { action = [&g, o, run] { return run(g, *o); }; });
    return c;
  };
  sub("list", "Every skill with its confidence and evidence counts", run_list)
      ->add_flag("--json", o->json, "Print JSON");
  auto* show = sub("show", "One skill with its evidence", run_show);
  show->add_option("id", o->id, "Skill id (or its unique prefix)")->required();
  show->add_flag("--json", o->json, "Print JSON");
  sub("export", "Write the library to a versioned JSON file", run_export)
      ->add_option("--out", o->out, "The file to write")
      ->required();
  auto* imp = sub("import", "Add the skills of an exported file (all or nothing)", run_import);
  imp->add_option("file", o->file, "A file written by skills export")->required();
  imp->add_flag("--json", o->json, "Print JSON");
  auto* prune = sub("prune", "Remove skills below a confidence", run_prune);
  prune->add_option("--min-confidence", o->min_confidence, "Keep skills at or above (0.25)");
  prune->add_flag("--json", o->json, "Print JSON");
}

}  // namespace ok::cli
