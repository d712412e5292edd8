// A skill: reusable, evidence-backed optimisation knowledge that carries over between sessions.
//
// Design (docs/skills.md):
//   Skill      = signature (when it applies) + text (for retrieval) + action (what to do) +
//                evidence (where it came from, whether it helped), with a confidence from that.
//   Signature  = the op pattern (the builtin proposer's, e.g. "row:softmax", else "ops:" and the
//                graph IR's ops), the graph IR's distinct ops, the shape regime (log2 of the
//                largest input's elements and of its last dimension), dtypes, backend and the
//                GPU architecture ("sm_90") or "cpu" ("any" for seeds).
//   Action     = kind "builtin": {template: skill ids joined by '+', params: a template point,
//                moves: the axis moves that gained}; kind "model": {technique, exemplar}.
//   Evidence   = one row per (skill, session): role source (distilled from it) or used (fed to
//                it), outcome helped / failed / neutral / pending, speedups, attempt, hardware.
//   Confidence = (helped + 1) / (helped + failed + 2), Laplace's rule over resolved evidence.
// A skill's id is a hash of its kind, signature and action, so the same knowledge learnt twice
// (or in two stores) is one skill whose evidence adds up. Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace ok::skills {

struct Signature {
  std::string pattern;              // "row:softmax", "pointwise", "ops:matmul+relu"; "" any
  std::vector<std::string> ops;     // the graph IR's distinct ops, sorted; empty: any
  int log2_elements = -1;           // floor(log2(elements of the largest input)); -1 any
  int log2_last_dim = -1;           // floor(log2(its last dimension)); -1 any
  std::vector<std::string> dtypes;  // the inputs' distinct dtypes, sorted; empty: any
  std::string backend;              // cpu, triton, cuda
  std::string arch = "any";         // "sm_90", "cpu", or "any"

  nlohmann::json to_json() const;
  static util::Result<Signature> from_json(const nlohmann::json& j);
};

struct Evidence {
  std::string session;
  std::string role;     // source, used
  std::string outcome;  // helped, failed, neutral, pending
  int rank = 0;         // used: its rank among the skills fed to the session
  std::optional<int> attempt;
  std::optional<double> speedup_before, speedup_after;
  std::string hardware;  // the device's name
  std::string created_at;

  nlohmann::json to_json() const;
  static util::Result<Evidence> from_json(const nlohmann::json& j);
};

struct Skill {
  std::string id;          // skill_id(kind, signature, action)
  std::string kind;        // builtin, model
  std::string provenance;  // seed, learned
  Signature signature;
  std::string title;  // one line
  std::string text;   // free text for retrieval and prompts
  nlohmann::json action = nlohmann::json::object();
  std::vector<Evidence> evidence;
  std::string created_at;

  int helped() const;
  int failed() const;
  double confidence() const;
  // The export format's object (docs/skills.md); with_evidence false: the store's columns only.
  nlohmann::json to_json(bool with_evidence = true) const;
  // Checks every field (the import's guard); the id must be the hash of what it names.
  static util::Result<Skill> from_json(const nlohmann::json& j);
};

// "sk-" and 16 hex digits: FNV-1a 64 of the kind, the signature and the action (canonical JSON,
// without a model skill's "exemplar").
std::string skill_id(const std::string& kind, const Signature& s, const nlohmann::json& action);

// The confidence of `helped` and `failed` resolved uses (the formula above).
double confidence(int helped, int failed);

}  // namespace ok::skills
