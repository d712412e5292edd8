// Writes the builtin generator's candidates for one graph IR to a folder, for
// bench/builtin_check.sh and by hand: generate_candidates IR.json REFERENCE.py BACKEND OUT_DIR [MAX
// [SEED [SKILLS_DIR]]]. OUT_DIR gets candidate_<k>.py and proposal.json. Exit 0 when supported, 3
// when not, 2 on errors.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "generate/generate.hpp"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: generate_candidates IR.json REFERENCE.py BACKEND OUT_DIR [MAX [SEED "
                 "[SKILLS_DIR]]]\n";
    return 2;
  }
  auto ir = nlohmann::json::parse(slurp(argv[1]), nullptr, false);
  if (ir.is_discarded()) {
    std::cerr << "cannot parse " << argv[1] << "\n";
    return 2;
  }
  // The worker's analyze reply may wrap the graph in {"ok":..., "result": {...}}.
  if (ir.contains("graph")) ir = ir["graph"];
  std::string reference = slurp(argv[2]);
  int max = argc > 5 ? std::atoi(argv[5]) : 8;
  uint64_t seed = argc > 6 ? std::strtoull(argv[6], nullptr, 10) : 0;
  std::filesystem::path skills =
      argc > 7 ? std::filesystem::path(argv[7])
               : std::filesystem::path(OPENKERNEL_TEST_SOURCE_ROOT) / "data" / "skills";
  auto p = ok::generate::propose(ir, argv[3], reference, skills, seed, max);
  if (!p) {
    std::cerr << "error: " << p.error().message << "\n";
    return 2;
  }
  std::filesystem::path out(argv[4]);
  std::filesystem::create_directories(out);
  nlohmann::json summary = {{"supported", p->supported},
                            {"reason", p->reason},
                            {"pattern", p->pattern},
                            {"candidates", nlohmann::json::array()}};
  for (size_t k = 0; k < p->candidates.size(); ++k) {
    const auto& c = p->candidates[k];
    std::string file = fmt::format("candidate_{}.py", k);
    std::ofstream(out / file) << c.source;
    summary["candidates"].push_back({{"file", file},
                                     {"pattern", c.pattern},
                                     {"skill", c.skill},
                                     {"params", c.params},
                                     {"description", c.description}});
  }
  std::ofstream(out / "proposal.json") << summary.dump(2) << "\n";
  std::cout << (p->supported ? "supported: " + p->pattern : "unsupported: " + p->reason) << "\n";
  return p->supported ? 0 : 3;
}
