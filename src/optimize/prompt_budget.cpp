#include "optimize/prompt_budget.hpp"

#include <memory>

namespace ok::optimize {

using nlohmann::json;

size_t estimated_tokens(size_t chars) {
  return (chars + kCharsPerToken - 1) / kCharsPerToken;
}

PromptBudgets PromptBudgets::scaled_to(size_t total_tokens) const {
  PromptBudgets b = *this;
  if (total == 0) return b;
  for (size_t* v : {&b.best, &b.recent, &b.diagnosis, &b.ideas, &b.failures, &b.skills})
    *v = *v * total_tokens / total;
  b.total = total_tokens;
  return b;
}

void FittedPrompt::merge_into(json& ctx) const {
  for (const auto& s : sections)
    for (const auto& [k, v] : s.context.items()) ctx[k] = v;
}

json FittedPrompt::summary() const {
  json list = json::array();
  for (const auto& s : sections)
    list.push_back({{"name", s.name},
                    {"variant", s.variant},
                    {"variants", s.variants},
                    {"chars", s.chars},
                    {"budget_chars", s.budget_chars},
                    {"over_budget", s.over_budget}});
  return {{"budget_chars", budget_chars},
          {"chars", chars},
          {"estimated_tokens", estimated_tokens(chars)},
          {"over_budget", over_budget},
          {"sections", std::move(list)}};
}

FittedPrompt fit_sections(const std::vector<PromptSection>& sections, size_t total_budget_chars,
                          const Measure& measure) {
  FittedPrompt out;
  out.budget_chars = total_budget_chars;
  std::vector<std::vector<size_t>> sizes(sections.size());
  for (size_t i = 0; i < sections.size(); ++i) {
    const PromptSection& s = sections[i];
    FittedSection f{s.name, 0, s.variants.size(), 0, s.budget_chars, false, json::object()};
    for (const auto& v : s.variants) sizes[i].push_back(measure(v));
    if (!s.variants.empty()) {
      size_t v = 0;
      while (v < sizes[i].size() && sizes[i][v] > s.budget_chars) ++v;
      f.over_budget = v == sizes[i].size();
      f.variant = f.over_budget ? sizes[i].size() - 1 : v;
      f.chars = sizes[i][f.variant];
    }
    out.chars += f.chars;
    out.sections.push_back(std::move(f));
  }
  while (out.chars > total_budget_chars) {
    FittedSection* step = nullptr;
    for (auto& f : out.sections) {
      if (f.variants == 0 || f.variant + 1 >= f.variants) continue;
      const int p = sections[static_cast<size_t>(&f - out.sections.data())].priority;
      const int q = step ? sections[static_cast<size_t>(step - out.sections.data())].priority : 0;
      if (!step || p < q || (p == q && f.chars > step->chars)) step = &f;
    }
    if (!step) break;
    const size_t i = static_cast<size_t>(step - out.sections.data());
    out.chars -= step->chars;
    step->chars = sizes[i][++step->variant];
    step->over_budget = step->chars > step->budget_chars;
    out.chars += step->chars;
  }
  out.over_budget = out.chars > total_budget_chars;
  for (size_t i = 0; i < sections.size(); ++i) {
    FittedSection& f = out.sections[i];
    if (f.variants > 0) f.context = sections[i].variants[f.variant];
    out.over_budget = out.over_budget || f.over_budget;
  }
  return out;
}

Measure template_measure(const Template& t) {
  auto empty = render(t, json::object());
  const size_t base = empty ? empty->size() : 0;
  auto tmpl = std::make_shared<const Template>(t);
  return [tmpl, base](const json& ctx) -> size_t {
    auto r = render(*tmpl, ctx);
    return r && r->size() > base ? r->size() - base : 0;
  };
}

}  // namespace ok::optimize
