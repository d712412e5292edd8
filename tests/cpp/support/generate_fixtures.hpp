// Fixtures of the builtin generator's tests (test_generate*.cpp): the source root, data/skills,
// a minimal reference program, the graph IRs under tests/fixtures/generate by name, and must(),
// which proposes candidates and fails the current test (returning an empty Proposal) on an error.
// Needs OPENKERNEL_TEST_SOURCE_ROOT defined by the test target. Tests only; thread-safe (no state).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "generate/generate.hpp"

namespace ok::testing {

inline const std::filesystem::path kRoot = OPENKERNEL_TEST_SOURCE_ROOT;
inline const std::filesystem::path kSkills = kRoot / "data" / "skills";
inline const std::string kReference =
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    pass\n";

// tests/fixtures/generate/NAME.json, parsed (a missing or malformed file throws).
inline nlohmann::json fixture(const std::string& name) {
  std::ifstream in(kRoot / "tests" / "fixtures" / "generate" / (name + ".json"));
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// propose() over kReference and kSkills; max <= 0: the whole parameter space.
inline generate::Proposal must(const nlohmann::json& ir, const std::string& backend,
                               uint64_t seed = 0, int max = 8) {
  auto p = generate::propose(ir, backend, kReference, kSkills, seed, max);
  EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().message);
  return p ? *p : generate::Proposal{};
}

}  // namespace ok::testing
