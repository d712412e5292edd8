// The builtin generator: src/generate's pattern templates, tried in the order of their prior (the
// proposer's, reordered by the skills the session was fed).
#include <fmt/core.h>

#include <set>

#include "generate/generate.hpp"
#include "optimize/agents.hpp"
#include "skills/retrieve.hpp"

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

  // The points in the order of the skills the session was fed (skills::prior_order), else the
  // proposer's.
  std::vector<json> space(const ProblemContext& p) override {
    std::vector<json> out;
    if (!ensure(p).empty() || !proposal_->supported) return out;
    for (const auto& c : proposal_->candidates) out.push_back(params_of(c));
    order_ = skills::prior_order(out, p.library);
    std::vector<json> ordered;
    for (size_t i : order_) ordered.push_back(out[i]);
    return ordered;
  }

  Generation next(const ProblemContext& p, const std::vector<Attempt>& history,
                  const search::Direction* direction, llm::StreamSink* /*text*/) override {
    Generation g;
    if (std::string why = ensure(p); !why.empty()) {
      g.verdict = "unsupported";
      g.error = why;
      g.exhausted = true;
      return g;
    }
    if (!proposal_->supported) {
      g.verdict = proposal_->reason.rfind("the builtin generator failed", 0) == 0
                      ? "generation_failed"
                      : "unsupported";
      g.error = proposal_->reason;
      g.exhausted = true;
      return g;
    }
    if (direction && direction->point) {
      // The search chose the point.
      if (*direction->point >= proposal_->candidates.size()) {
        g.error = fmt::format("the search asked for template point {} of {}", *direction->point,
                              proposal_->candidates.size());
        return g;
      }
      return render(candidate(*direction->point));
    }
    // No direction: the next point in prior order that this session has not tried (a resumed
    // session replays the same list).
    std::set<std::string> tried;
    for (const auto& a : history) tried.insert(strip(a.params).dump());
    for (size_t i = 0; i < proposal_->candidates.size(); ++i) {
      const auto& c = candidate(i);
      if (tried.count(params_of(c).dump())) continue;
      return render(c);
    }
    g.exhausted = true;
    return g;
  }

 private:
  std::filesystem::path skills_;
  uint64_t seed_;
  int max_;
  std::optional<generate::Proposal> proposal_;
  std::vector<size_t> order_;  // the space's order: indices into proposal_->candidates

  // Point i of the space (the proposer's order until space() set another).
  const generate::GeneratedCandidate& candidate(size_t i) const {
    return proposal_->candidates[i < order_.size() ? order_[i] : i];
  }

  static json params_of(const generate::GeneratedCandidate& c) {
    json params = c.params;
    params["skill"] = c.skill;
    params["pattern"] = c.pattern;
    return params;
  }

  // An attempt's params without what the search added (its intent).
  static json strip(json params) {
    if (params.is_object()) params.erase("intent");
    return params;
  }

  Generation render(const generate::GeneratedCandidate& c) const {
    Generation g;
    g.source = c.source;
    g.description = c.description + describe(c.params);
    g.params = params_of(c);
    return g;
  }

  // Builds the proposal once; returns why the reference cannot be read ("" when it can).
  std::string ensure(const ProblemContext& p) {
    if (proposal_) return "";
    if (!p.graph.is_object())
      return "the reference's operator graph is unavailable, so the builtin generator has "
             "nothing to match";
    if (!p.graph.value("traceable", false))
      return "the builtin generator cannot read this reference: " +
             p.graph.value("reason", std::string("torch.fx could not trace it"));
    auto r = generate::propose(p.graph, p.backend, p.source, skills_, seed_, max_);
    if (!r) {
      proposal_.emplace();
      proposal_->supported = false;
      proposal_->reason = "the builtin generator failed: " + r.error().message;
      return "";
    }
    proposal_ = std::move(*r);
    if (!proposal_->supported)
      proposal_->reason = "unsupported by the builtin generator: " + proposal_->reason;
    return "";
  }
};

}  // namespace

std::unique_ptr<Generator> make_builtin_generator(std::filesystem::path skills_dir, uint64_t seed,
                                                  int max_candidates) {
  return std::make_unique<BuiltinGenerator>(std::move(skills_dir), seed, max_candidates);
}

}  // namespace ok::optimize
