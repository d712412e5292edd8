// Fixtures of the builtin generator's tests (test_generate*.cpp): the source root, data/skills,
// a minimal reference program, the graph IRs under tests/fixtures/generate by name, must(), which
// proposes candidates and fails the current test (returning an empty Proposal) on an error, run()
// (a shell command's status), node() and single_node() (hand-written IR nodes and graphs),
// cuda_source() (a CUDA candidate's kernels), nvcc_compile(), and
// expect_supported_without_vendor(), every fixture of a family on every backend, and
// expect_triton_parses() / expect_cuda_compiles(), its first Triton and CUDA candidates checked.
// Needs OPENKERNEL_TEST_SOURCE_ROOT defined by the test target. Tests only; thread-safe (no state).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "generate/generate.hpp"
#include "generate/graph.hpp"

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

// A shell command's exit status (-1 when it did not exit normally).
inline int run(const std::string& command) {
  int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The CUDA kernels of a cuda candidate's source (its _OK_SOURCE text); empty when it has none.
inline std::string cuda_source(const std::string& candidate) {
  const std::string open = "_OK_SOURCE = r\"\"\"\n";
  const size_t begin = candidate.find(open);
  if (begin == std::string::npos) return "";
  const size_t end = candidate.find("\"\"\"", begin + open.size());
  return candidate.substr(begin + open.size(), end - begin - open.size());
}

// Compiles a cuda candidate's kernels for sm_90 (`stem`.cu to `stem`.o): nvcc's status, -1 when
// the candidate has no kernels.
inline int nvcc_compile(const std::string& candidate, const std::filesystem::path& stem) {
  const std::string cu = cuda_source(candidate);
  if (cu.empty()) return -1;
  std::ofstream(stem.string() + ".cu") << cu;
  return run("nvcc -c -arch=sm_90 -o " + stem.string() + ".o " + stem.string() + ".cu");
}

// propose() over kReference and kSkills; max <= 0: the whole parameter space.
inline generate::Proposal must(const nlohmann::json& ir, const std::string& backend,
                               uint64_t seed = 0, int max = 8) {
  auto p = generate::propose(ir, backend, kReference, kSkills, seed, max);
  EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().message);
  return p ? *p : generate::Proposal{};
}

// A candidate's forward: its source from `class ModelNew(Model):` on.
inline std::string forward_of(const std::string& source) {
  return source.substr(source.find("class ModelNew(Model):"));
}

// Each {fixture NAME, PATTERN} on every backend, the first `max` points: supported with that
// pattern, at least one candidate, and no candidate's forward matching `vendor` (the calls that
// would leave the op to PyTorch). Fails the current test at the first unsupported fixture.
inline void expect_supported_without_vendor(
    const std::vector<std::pair<std::string, std::string>>& cases, const std::regex& vendor,
    int max = 8) {
  for (const auto& [name, pattern] : cases) {
    for (const char* backend : {"cpu", "triton", "cuda"}) {
      generate::Proposal p = must(fixture(name), backend, 0, max);
      ASSERT_TRUE(p.supported) << name << " " << backend << ": " << p.reason;
      EXPECT_EQ(p.pattern, pattern) << name << " " << backend;
      ASSERT_FALSE(p.candidates.empty()) << name << " " << backend;
      for (const auto& c : p.candidates)
        EXPECT_FALSE(std::regex_search(forward_of(c.source), vendor))
            << name << " " << backend << ":\n"
            << forward_of(c.source);
    }
  }
}

// lower() of an IR that must lower and be supported; fails the current test otherwise.
inline generate::Graph lowered(const nlohmann::json& ir) {
  auto skills = generate::load_skills(kSkills);
  EXPECT_TRUE(skills.has_value());
  auto l = generate::lower(ir, *skills);
  EXPECT_TRUE(l.has_value()) << (l ? "" : l.error().message);
  if (!l) return {};
  EXPECT_EQ(l->unsupported, "");
  return l->graph;
}

// One IR node `name` = `op`(args) {kwargs} of `shape` and `dtype`.
inline nlohmann::json node(const std::string& name, const std::string& op, nlohmann::json args,
                           nlohmann::json shape, nlohmann::json kwargs = nlohmann::json::object(),
                           const std::string& dtype = "float32") {
  return {{"name", name},     {"op", op},       {"args", args},
          {"kwargs", kwargs}, {"shape", shape}, {"dtype", dtype}};
}

// An IR of one float32 node `op` {kwargs} over the input x of shape `in`, giving `out`.
inline nlohmann::json single_node(const std::string& op, nlohmann::json kwargs, nlohmann::json in,
                                  nlohmann::json out) {
  using nlohmann::json;
  return {{"traceable", true},
          {"inputs", json::array({{{"name", "x"}, {"index", 0}, {"shape", in}}})},
          {"nodes", json::array({{{"name", "y"},
                                  {"op", op},
                                  {"args", json::array({{{"input", "x"}}})},
                                  {"kwargs", kwargs},
                                  {"shape", out},
                                  {"dtype", "float32"}}})},
          {"outputs", json::array({{{"node", "y"}}})}};
}

// The first Triton candidate of each case's fixture parses as Python (skips without
// /usr/bin/python3); `tag` names the temporary folder.
inline void expect_triton_parses(const std::vector<std::pair<std::string, std::string>>& cases,
                                 const std::string& tag) {
  if (run("/usr/bin/python3 -c pass >/dev/null 2>&1") != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const auto dir =
      std::filesystem::temp_directory_path() / ("ok_" + tag + "_ast_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const auto& [name, pattern] : cases) {
    const auto file = dir / (name + ".py");
    std::ofstream(file) << must(fixture(name), "triton", 0, 1).candidates.at(0).source;
    EXPECT_EQ(run("/usr/bin/python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' " +
                  file.string()),
              0)
        << name;
  }
  std::filesystem::remove_all(dir);
}

// The first CUDA candidate's kernels of each case's fixture, one file each, compiled by one nvcc
// call for sm_90 (skips without nvcc).
inline void expect_cuda_compiles(const std::vector<std::pair<std::string, std::string>>& cases,
                                 const std::string& tag) {
  if (run("nvcc --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no nvcc on PATH";
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ok_" + tag + "_nvcc_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string files;
  for (const auto& [name, pattern] : cases) {
    const std::string cu = cuda_source(must(fixture(name), "cuda", 0, 1).candidates.at(0).source);
    ASSERT_FALSE(cu.empty()) << name;
    std::ofstream(dir / (name + ".cu")) << cu;
    files += " " + name + ".cu";
  }
  EXPECT_EQ(run("cd " + dir.string() + " && nvcc -c -arch=sm_90" + files), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace ok::testing
