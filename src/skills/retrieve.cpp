#include "skills/retrieve.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "skills/bm25.hpp"

namespace ok::skills {

using nlohmann::json;

namespace {

int floor_log2(double v) {
  return v >= 1 ? static_cast<int>(std::floor(std::log2(v))) : -1;
}

std::string family(const std::string& pattern) {
  return pattern.substr(0, pattern.find(':'));
}

double jaccard(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::set<std::string> sa(a.begin(), a.end()), sb(b.begin(), b.end()), all = sa;
  all.insert(sb.begin(), sb.end());
  if (all.empty()) return 0;
  size_t common = 0;
  for (const auto& x : sa) common += sb.count(x);
  return static_cast<double>(common) / static_cast<double>(all.size());
}

// +1 equal, +0.5 within `near`, +0.25 when the skill says any.
double regime_term(int skill, int problem, int near) {
  if (skill < 0) return 0.25;
  if (problem < 0) return 0;
  int d = std::abs(skill - problem);
  return d == 0 ? 1.0 : d <= near ? 0.5 : 0.0;
}

// The words BM25 reads for a skill: its title and text, pattern, ops and template.
std::string document_of(const Skill& s) {
  std::string doc = s.title + " " + s.text + " " + s.signature.pattern;
  for (const auto& op : s.signature.ops) doc += " " + op;
  if (s.action.contains("template") && s.action["template"].is_string())
    doc += " " + s.action["template"].get<std::string>();
  if (s.action.contains("technique") && s.action["technique"].is_string())
    doc += " " + s.action["technique"].get<std::string>();
  return doc;
}

bool template_in(const Skill& s, const std::vector<json>& points) {
  const std::string t = s.action.value("template", std::string());
  return std::any_of(points.begin(), points.end(), [&](const json& p) {
    return p.is_object() && p.value("skill", std::string()) == t;
  });
}

// 1 when `s` names the point, else half the fraction of its parameters the point shares.
double match(const Skill& s, const json& point) {
  const json& params = s.action.value("params", json::object());
  int total = 0, same = 0;
  for (const auto& [skill, values] : params.items()) {
    if (!values.is_object()) continue;
    for (const auto& [name, v] : values.items()) {
      ++total;
      same += point.contains(skill) && point[skill].is_object() && point[skill].contains(name) &&
              point[skill][name] == v;
    }
  }
  if (total == 0) return 0;
  return same == total ? 1.0 : 0.5 * same / total;
}

std::string fmt_speedup(const std::optional<double>& v) {
  return v ? fmt::format("{:.2f}x", *v) : "-";
}

// One skill's entry in the prompt; the exemplar cut to `exemplar_chars` (0: none).
std::string entry(const RankedSkill& r, size_t exemplar_chars) {
  const Skill& s = r.skill;
  std::set<std::string> hardware;
  std::optional<double> best;
  for (const auto& e : s.evidence) {
    if (!e.hardware.empty()) hardware.insert(e.hardware);
    if (e.outcome == "helped" && e.speedup_after && (!best || *e.speedup_after > *best))
      best = e.speedup_after;
  }
  std::string hw;
  for (const auto& h : hardware) hw += (hw.empty() ? "" : ", ") + h;
  std::string out = fmt::format(
      "- {} ({}, {}; confidence {:.2f}: helped {}, failed {}{}{})\n",
      s.title.empty() ? s.id : s.title, s.id, s.provenance, s.confidence(), s.helped(), s.failed(),
      best ? ", best " + fmt_speedup(best) : "", hw.empty() ? "" : ", on " + hw);
  if (!s.text.empty()) out += "  " + s.text + "\n";
  if (s.kind == "builtin")
    out += fmt::format("  template {} with {}\n", s.action.value("template", ""),
                       s.action.value("params", json::object()).dump());
  if (s.action.contains("technique") && s.action["technique"].is_string())
    out += "  technique: " + s.action["technique"].get<std::string>() + "\n";
  const std::string ex = s.action.value("exemplar", std::string());
  if (!ex.empty() && exemplar_chars > 0) {
    std::string cut = ex.size() <= exemplar_chars ? ex : ex.substr(0, exemplar_chars) + "\n...";
    out += "  exemplar:\n```\n" + cut + "\n```\n";
  }
  return out;
}

}  // namespace

Signature signature_of(const json& graph, const json& inspect, const json& device,
                       const std::string& backend, const std::vector<json>& points) {
  Signature s;
  s.backend = backend;
  std::set<std::string> ops, dtypes;
  if (graph.is_object())
    for (const auto& n : graph.value("nodes", json::array()))
      if (n.is_object() && n.contains("op") && n["op"].is_string())
        ops.insert(n["op"].get<std::string>());
  s.ops.assign(ops.begin(), ops.end());
  // The inputs: the graph's (shapes after --set), else the inspection's.
  json inputs = graph.is_object() ? graph.value("inputs", json::array()) : json::array();
  if (inputs.empty() && inspect.is_object()) inputs = inspect.value("inputs", json::array());
  double largest = 0, last = 0;
  for (const auto& in : inputs) {
    if (!in.is_object()) continue;
    if (in.contains("dtype") && in["dtype"].is_string()) dtypes.insert(in["dtype"]);
    double n = 1;
    const json shape = in.value("shape", json::array());
    for (const auto& d : shape) n *= d.is_number() ? d.get<double>() : 1.0;
    if (shape.is_array() && !shape.empty() && n > largest) {
      largest = n;
      last = shape.back().is_number() ? shape.back().get<double>() : 0.0;
    }
  }
  s.dtypes.assign(dtypes.begin(), dtypes.end());
  s.log2_elements = floor_log2(largest);
  s.log2_last_dim = floor_log2(last);
  if (!points.empty() && points.front().is_object())
    s.pattern = points.front().value("pattern", std::string());
  if (s.pattern.empty() && !s.ops.empty()) {
    s.pattern = "ops:";
    for (size_t i = 0; i < s.ops.size(); ++i) s.pattern += (i ? "+" : "") + s.ops[i];
  }
  const std::string cc = device.is_object() ? device.value("compute_capability", "") : "";
  if (backend == "cpu")
    s.arch = "cpu";
  else if (!cc.empty())
    s.arch = "sm_" + std::string(cc.begin(), cc.end());
  std::erase(s.arch, '.');
  return s;
}

double signature_score(const Signature& k, const std::string& kind, const Signature& p) {
  if (kind == "builtin" && k.backend != p.backend) return -1;
  double score = k.backend == p.backend ? 1.0 : 0.0;
  if (k.pattern.empty())
    score += 1;
  else if (k.pattern == p.pattern)
    score += 4;
  else if (family(k.pattern) == family(p.pattern))
    score += 2;
  if (!k.ops.empty() && !p.ops.empty()) score += 2 * jaccard(k.ops, p.ops);
  score += k.arch == p.arch ? 2.0 : k.arch == "any" ? 0.5 : 0.0;
  score += k.dtypes.empty() ? 0.5 : k.dtypes == p.dtypes ? 1.0 : 0.0;
  score += regime_term(k.log2_elements, p.log2_elements, 2);
  score += regime_term(k.log2_last_dim, p.log2_last_dim, 1);
  return score;
}

std::vector<RankedSkill> retrieve(const std::vector<Skill>& library, const Signature& problem,
                                  const RetrieveOptions& o) {
  std::vector<RankedSkill> out;
  std::vector<std::string> documents;
  for (const auto& s : library) {
    if (s.confidence() < o.min_confidence) continue;
    const double sig = signature_score(s.signature, s.kind, problem);
    if (sig < 0) continue;
    if (s.kind == "builtin" && !o.points.empty() && !template_in(s, o.points)) continue;
    out.push_back({s, std::round(sig * 10) / 10, 0, 0});
    documents.push_back(document_of(s));
  }
  std::string query = o.query + " " + problem.pattern + " " + problem.backend + " " + problem.arch;
  for (const auto& w : problem.ops) query += " " + w;
  for (const auto& w : problem.dtypes) query += " " + w;
  const auto bm = Bm25(documents).score(query);
  for (size_t i = 0; i < out.size(); ++i)
    out[i].text_score = bm[i] * (0.5 + out[i].skill.confidence());
  std::sort(out.begin(), out.end(), [](const RankedSkill& a, const RankedSkill& b) {
    if (a.signature_score != b.signature_score) return a.signature_score > b.signature_score;
    if (a.text_score != b.text_score) return a.text_score > b.text_score;
    return a.skill.id < b.skill.id;
  });
  if (out.size() > o.top) out.resize(o.top);
  for (size_t i = 0; i < out.size(); ++i) out[i].rank = static_cast<int>(i);
  return out;
}

std::vector<RankedSkill> rerank(std::vector<RankedSkill> fed, const std::string& context) {
  if (fed.size() < 2) return fed;
  std::vector<std::string> documents;
  for (const auto& r : fed) documents.push_back(document_of(r.skill));
  const auto bm = Bm25(documents).score(context);
  std::vector<double> score(fed.size());
  for (size_t i = 0; i < fed.size(); ++i) score[i] = bm[i] * (0.5 + fed[i].skill.confidence());
  std::vector<size_t> order(fed.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return score[a] > score[b]; });
  std::vector<RankedSkill> out;
  out.reserve(fed.size());
  for (size_t k = 0; k < order.size(); ++k) {
    out.push_back(std::move(fed[order[k]]));
    out.back().rank = static_cast<int>(k);
  }
  return out;
}

bool names_point(const Skill& s, const json& point) {
  return s.kind == "builtin" && point.is_object() &&
         point.value("skill", std::string()) == s.action.value("template", std::string()) &&
         match(s, point) == 1.0;
}

std::vector<size_t> prior_order(const std::vector<json>& points,
                                const std::vector<RankedSkill>& ranked) {
  // Only skills learnt on this very pattern: analogies from the family (a softmax's best point
  // for a log-softmax) misled more than they helped on the measured landscapes
  // (bench/results/cpu_skills_ablation.txt); they still reach the prompt.
  const std::string pattern = points.empty() ? "" : points.front().value("pattern", std::string());
  std::vector<const RankedSkill*> applicable;
  double top = 0;
  for (const auto& r : ranked)
    if (r.skill.kind == "builtin" && r.skill.provenance != "seed" &&
        r.skill.signature.pattern == pattern && template_in(r.skill, points)) {
      applicable.push_back(&r);
      top = std::max(top, r.signature_score);
    }
  // A vote: every applicable skill counts, weighted by its confidence and by how well its
  // signature fits (relative to the best fitting one), so the points the similar problems' winners
  // agree on come first; one skill's winner does not outrank what the others agree on just
  // because its problem's name shares more words with this one's.
  std::vector<double> score(points.size(), 0.0);
  for (size_t i = 0; i < points.size(); ++i)
    for (const RankedSkill* r : applicable) {
      const Skill& s = r->skill;
      if (points[i].value("skill", std::string()) != s.action.value("template", std::string()))
        continue;
      const double fit = top > 0 ? std::max(0.0, r->signature_score) / top : 1.0;
      score[i] += s.confidence() * fit * match(s, points[i]);
    }
  std::vector<size_t> order(points.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return score[a] > score[b]; });
  return order;
}

std::vector<search::SeedIntent> seed_intents(const std::vector<RankedSkill>& ranked,
                                             const std::vector<json>& points) {
  std::vector<search::SeedIntent> out;
  for (const auto& r : ranked) {
    search::SeedIntent s{.skill = r.skill.id,
                         .title = r.skill.title.empty() ? r.skill.id : r.skill.title,
                         .confidence = r.skill.confidence(),
                         .rank = r.rank};
    for (size_t i = 0; i < points.size() && !s.point; ++i)
      if (names_point(r.skill, points[i])) s.point = i;
    s.technique = r.skill.action.value("technique", s.title);
    out.push_back(std::move(s));
  }
  return out;
}

std::string prompt_section(const std::vector<RankedSkill>& ranked, size_t budget_chars) {
  std::string out;
  for (const auto& r : ranked) {
    const size_t left = budget_chars - out.size();
    std::string e = entry(r, 1200);
    if (e.size() > left) {
      // Cut the exemplar to fit, else leave the exemplar out, else leave the skill out.
      const std::string bare = entry(r, 0);
      const size_t room = left > bare.size() + 40 ? left - bare.size() - 40 : 0;
      e = room >= 200 ? entry(r, room) : bare;
      if (e.size() > left) continue;
    }
    out += e;
  }
  return out;
}

}  // namespace ok::skills
