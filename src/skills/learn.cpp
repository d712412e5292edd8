#include "skills/learn.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace ok::skills {

using nlohmann::json;

namespace {

const AttemptFact* best_of(const std::vector<AttemptFact>& attempts) {
  const AttemptFact* best = nullptr;
  for (const auto& a : attempts)
    if (a.correct && a.speedup && (!best || *a.speedup > *best->speedup)) best = &a;
  return best;
}

const AttemptFact* first_correct(const std::vector<AttemptFact>& attempts) {
  for (const auto& a : attempts)
    if (a.correct && a.speedup) return &a;
  return nullptr;
}

// The template point without what is not a template parameter.
json point_of(const json& params) {
  json p = json::object();
  if (!params.is_object()) return p;
  for (const auto& [k, v] : params.items())
    if (k != "skill" && k != "pattern" && k != "intent" && v.is_object()) p[k] = v;
  return p;
}

std::string words(const json& point) {
  std::string out;
  for (const auto& [skill, values] : point.items())
    for (const auto& [k, v] : values.items())
      out +=
          (out.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

std::string regime_words(const Signature& s) {
  std::string out;
  if (s.log2_elements >= 0) out += fmt::format(", about 2^{} elements", s.log2_elements);
  if (s.log2_last_dim >= 0) out += fmt::format(", last dimension about 2^{}", s.log2_last_dim);
  for (const auto& d : s.dtypes) out += ", " + d;
  return out;
}

std::string cut(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n) + "...";
}

}  // namespace

std::string exemplar_of(const std::string& source, size_t max_chars) {
  size_t start = std::string::npos;
  for (const char* marker : {"@triton.jit", "__global__", "extern \"C\"", "#include"}) {
    size_t at = source.find(marker);
    if (at != std::string::npos) start = std::min(start, at);
  }
  if (start == std::string::npos) start = 0;
  start = source.rfind('\n', start) == std::string::npos ? 0 : source.rfind('\n', start) + 1;
  std::string out = source.substr(start, max_chars);
  if (start + max_chars < source.size()) {
    size_t end = out.rfind('\n');
    if (end != std::string::npos && end > 0) out.resize(end);
  }
  return out;
}

std::optional<Skill> distil(const SessionLesson& s) {
  const AttemptFact* best = best_of(s.attempts);
  if (!best) return std::nullopt;
  const AttemptFact* first = first_correct(s.attempts);
  Skill k;
  k.provenance = "learned";
  k.signature = s.signature;
  std::string gained;
  for (const auto& g : s.gains) gained += (gained.empty() ? "" : "; ") + g;
  const std::string where = s.hardware.empty() ? s.signature.arch : s.hardware;
  if (s.builtin) {
    const std::string tmpl = best->params.value("skill", std::string());
    json point = point_of(best->params);
    if (tmpl.empty() || point.empty()) return std::nullopt;
    k.kind = "builtin";
    k.action = {{"template", tmpl}, {"params", point}};
    k.title = fmt::format("{} with {} ({}, {})", tmpl, words(point), s.signature.pattern, where);
    k.text = fmt::format(
        "{} ({}{}) on {}: best {} with {} at {:.3f}x, from {:.3f}x at the first correct "
        "attempt.{}",
        s.problem, s.signature.pattern, regime_words(s.signature), where, tmpl, words(point),
        *best->speedup, *first->speedup,
        gained.empty() ? "" : " Moves that gained: " + gained + ".");
  } else {
    k.kind = "model";
    std::string technique = best->description;
    if (!best->intent.empty()) technique += " (direction: " + best->intent + ")";
    if (technique.empty()) technique = "the kernel of the exemplar";
    k.action = {{"technique", cut(technique, 600)}, {"exemplar", exemplar_of(best->source)}};
    k.title = fmt::format("{} technique on {}: {}", s.signature.pattern, where,
                          cut(best->description, 80));
    k.text = fmt::format("{} ({}{}) on {}: {:.3f}x with this technique.{}", s.problem,
                         s.signature.pattern, regime_words(s.signature), where, *best->speedup,
                         gained.empty() ? "" : " Directions that gained: " + gained + ".");
  }
  k.id = skill_id(k.kind, k.signature, k.action);
  Evidence e{.session = s.session, .role = "source", .outcome = "helped"};
  e.attempt = best->number;
  e.speedup_before = first->speedup;
  e.speedup_after = best->speedup;
  e.hardware = s.hardware;
  k.evidence.push_back(std::move(e));
  return k;
}

std::string outcome_of(const Skill& used, const SessionLesson& s) {
  const AttemptFact* best = best_of(s.attempts);
  if (used.kind == "model" || !s.builtin) {
    if (!best) return "failed";
    return *best->speedup >= 1.0 ? "helped" : "neutral";
  }
  const AttemptFact* tried = nullptr;
  for (const auto& a : s.attempts)
    if (names_point(used, a.params) &&
        (!tried || (a.correct && (!tried->correct || a.speedup > tried->speedup))))
      tried = &a;
  if (!tried) return "neutral";
  if (!tried->correct || !tried->speedup || !best) return "failed";
  if (*tried->speedup >= 0.98 * *best->speedup) return "helped";
  if (*tried->speedup < *best->speedup / 1.1) return "failed";
  return "neutral";
}

util::Result<Lesson> learn(store::Store& store, const SessionLesson& s) {
  Lesson out;
  out.learned = distil(s);
  const AttemptFact* best = best_of(s.attempts);
  auto r = store.transaction([&]() -> util::Result<void> {
    for (const auto& u : s.used) {
      store::SkillEvidenceRow e{.skill_id = u.skill.id,
                                .session = s.session,
                                .role = "used",
                                .outcome = outcome_of(u.skill, s),
                                .rank = u.rank};
      for (const auto& a : s.attempts)
        if (names_point(u.skill, a.params)) {
          e.attempt = a.number;
          e.speedup_before = a.speedup;
          break;
        }
      if (best) e.speedup_after = best->speedup;
      e.hardware = s.hardware;
      if (auto w = store.put_skill_evidence(e); !w) return w;
      out.used.push_back({{"id", u.skill.id},
                          {"title", u.skill.title},
                          {"provenance", u.skill.provenance},
                          {"rank", u.rank},
                          {"outcome", e.outcome}});
    }
    if (!out.learned) return {};
    const Skill& k = *out.learned;
    auto added = store.insert_skill({.id = k.id,
                                     .kind = k.kind,
                                     .provenance = k.provenance,
                                     .signature_json = k.signature.to_json().dump(),
                                     .title = k.title,
                                     .text = k.text,
                                     .action_json = k.action.dump()});
    if (!added) return std::unexpected(added.error());
    out.learned_new = *added;
    // A skill the session was fed and confirmed has its use resolved above.
    bool was_used = std::any_of(s.used.begin(), s.used.end(),
                                [&](const RankedSkill& u) { return u.skill.id == k.id; });
    if (was_used) return {};
    const Evidence& e = k.evidence.front();
    return store.put_skill_evidence({.skill_id = k.id,
                                     .session = e.session,
                                     .role = e.role,
                                     .outcome = e.outcome,
                                     .attempt = e.attempt,
                                     .speedup_before = e.speedup_before,
                                     .speedup_after = e.speedup_after,
                                     .hardware = e.hardware});
  });
  if (!r) return std::unexpected(r.error());
  return out;
}

}  // namespace ok::skills
