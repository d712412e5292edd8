// The builtin generator: src/generate's pattern templates, tried in the order of their prior.
#include <fmt/core.h>

#include <set>

#include "generate/generate.hpp"
#include "optimize/agents.hpp"

namespace ok::optimize {

using nlohmann::json;

namespace {

// " (BLOCK=1024, num_warps=4)": the template parameters, so attempts can be told apart.
std::string describe(const json& params) {
  std::string out;
  for (const auto& [skill, values] : params.items()) {
    if (!values.is_object()) continue;
    for (const auto& [k, v] : values.items())
      out +=
          (out.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out.empty() ? "" : " (" + out + ")";
}

class BuiltinGenerator final : public Generator {
 public:
  BuiltinGenerator(std::filesystem::path skills, uint64_t seed, int max_candidates)
      : skills_(std::move(skills)), seed_(seed), max_(max_candidates) {}

  std::string name() const override { return "builtin"; }

  Generation next(const ProblemContext& p, const std::vector<Attempt>& history) override {
    Generation g;
    if (!proposal_) {
      if (!p.graph.is_object()) {
        g.verdict = "unsupported";
        g.error =
            "the reference's operator graph is unavailable, so the builtin generator has "
            "nothing to match";
        g.exhausted = true;
        return g;
      }
      if (!p.graph.value("traceable", false)) {
        g.verdict = "unsupported";
        g.error = "the builtin generator cannot read this reference: " +
                  p.graph.value("reason", std::string("torch.fx could not trace it"));
        g.exhausted = true;
        return g;
      }
      auto r = generate::propose(p.graph, p.backend, p.source, skills_, seed_, max_);
      if (!r) {
        g.error = "the builtin generator failed: " + r.error().message;
        g.exhausted = true;
        return g;
      }
      proposal_ = std::move(*r);
    }
    if (!proposal_->supported) {
      g.verdict = "unsupported";
      g.error = "unsupported by the builtin generator: " + proposal_->reason;
      g.exhausted = true;
      return g;
    }
    // Skip what this session already tried (a resumed session replays the same list).
    std::set<std::string> tried;
    for (const auto& a : history) tried.insert(a.params.dump());
    for (const auto& c : proposal_->candidates) {
      json params = c.params;
      params["skill"] = c.skill;
      params["pattern"] = c.pattern;
      if (tried.count(params.dump())) continue;
      g.source = c.source;
      g.description = c.description + describe(c.params);
      g.params = std::move(params);
      return g;
    }
    g.exhausted = true;
    return g;
  }

 private:
  std::filesystem::path skills_;
  uint64_t seed_;
  int max_;
  std::optional<generate::Proposal> proposal_;
};

}  // namespace

std::unique_ptr<Generator> make_builtin_generator(std::filesystem::path skills_dir, uint64_t seed,
                                                  int max_candidates) {
  return std::make_unique<BuiltinGenerator>(std::move(skills_dir), seed, max_candidates);
}

}  // namespace ok::optimize
