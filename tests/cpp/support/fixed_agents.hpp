// Agents for tests of the optimiser's loop that need no model: FixedGenerator writes one fixed
// candidate per direction (its sequence number in a comment, so candidates differ), NullCritic
// diagnoses every attempt as bottleneck "none" at no cost. Tests only.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "optimize/agents.hpp"

namespace ok::testing {

class FixedGenerator final : public optimize::Generator {
 public:
  std::string name() const override { return "fixed"; }
  optimize::Generation next(const optimize::ProblemContext&, const std::vector<optimize::Attempt>&,
                            const search::Direction* d, llm::StreamSink*) override {
    optimize::Generation g;
    g.source = "# candidate " + std::to_string(d ? d->sequence : 0) + "\n";
    g.description = "a fixed candidate";
    return g;
  }
};

class NullCritic final : public optimize::Critic {
 public:
  nlohmann::json diagnose(const optimize::ProblemContext&, const optimize::Attempt&,
                          const nlohmann::json&, double& cost) override {
    cost = 0;
    return nlohmann::json{{"bottleneck", "none"}};
  }
};

}  // namespace ok::testing
