// The skill library in the store: loading, the seed skills, recording which skills a session
// used, export and import as versioned JSON, pruning. Every write runs in one write transaction
// (BEGIN IMMEDIATE), and writes only add skills or set one (skill, session) evidence row, so two
// processes learning into one store lose nothing. Schema: docs/store.md (version 7); behaviour and
// file format: docs/skills.md. Functions take the caller's Store (one per thread).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "skills/retrieve.hpp"
#include "skills/skill.hpp"
#include "store/store.hpp"

namespace ok::skills {

inline constexpr const char* kFormat = "openkernel-skills";
inline constexpr int kFormatVersion = 1;

// Every skill with its evidence, oldest first.
util::Result<std::vector<Skill>> load(store::Store& store);
// The skill whose id is `id` or starts with it (kBadInput when none or several do).
util::Result<Skill> find(store::Store& store, const std::string& id);

// The seed skills of data/skills: one per kernel template file (provenance seed, architecture
// any, the template's first value of every parameter, its description as text).
util::Result<std::vector<Skill>> seed_skills(const std::filesystem::path& skills_dir);
// Adds the seed skills the store has never had (a pruned seed stays pruned: the ids seeded are
// kept under search_state ("global", "skills_seeded")); returns how many were added.
util::Result<int> ensure_seeds(store::Store& store, const std::filesystem::path& skills_dir);

// Records that `session` was fed `ranked` (evidence role used, outcome pending, its rank).
util::Result<void> record_uses(store::Store& store, const std::string& session,
                               const std::vector<RankedSkill>& ranked, const std::string& hardware);

// The export file's JSON: {"format": "openkernel-skills", "version": 1, "exported_at", "skills"}.
nlohmann::json export_json(const std::vector<Skill>& skills);

struct ImportReport {
  int skills = 0, added = 0, evidence = 0;
};
// Checks the whole document first (format, version, every skill and evidence entry; kBadInput
// naming what is wrong), then adds its skills and evidence in one transaction: nothing changes
// unless everything is valid. A resolved outcome in the store is not replaced by a pending one.
util::Result<ImportReport> import_json(store::Store& store, const nlohmann::json& document);

// Removes the skills whose confidence is below `min_confidence`; returns them.
util::Result<std::vector<Skill>> prune(store::Store& store, double min_confidence);

}  // namespace ok::skills
