// The profiling tiers' evidence as the engine reads it: the bottleneck class of a deep profile,
// the heuristic critic's diagnosis changing with it, the report's lines (docs/profiling.md).
#include <gtest/gtest.h>

#include <fstream>

#include "eval/evaluator.hpp"
#include "llm/json_schema.hpp"
#include "optimize/agents.hpp"
#include "profile/profile.hpp"

using nlohmann::json;
namespace opt = ok::optimize;
namespace prof = ok::profile;

namespace {

// A deep profile with one kernel of these metrics.
json deep(json kernel) {
  kernel["name"] = kernel.value("name", "softmax_kernel");
  kernel["duration_us"] = kernel.value("duration_us", 50.0);
  return {{"tier", "deep"},
          {"requested_tier", "deep"},
          {"kernel_metrics", json::array({kernel})},
          {"flags", json::array()},
          {"seconds", 9.5},
          {"tool", {{"name", "ncu"}}}};
}

json memory_bound() {
  return deep({{"dram_throughput_pct", 88.0},
               {"l2_throughput_pct", 40.0},
               {"sm_throughput_pct", 30.0},
               {"achieved_occupancy_pct", 82.0}});
}

json low_occupancy() {
  return deep({{"dram_throughput_pct", 20.0},
               {"sm_throughput_pct", 15.0},
               {"achieved_occupancy_pct", 18.0},
               {"theoretical_occupancy_pct", 25.0},
               {"registers_per_thread", 168.0},
               {"occupancy_limiter", {{"by", {"registers"}}}},
               {"top_stalls", json::array({{{"reason", "long_scoreboard"}, {"share", 0.6}}})}});
}

opt::ProblemContext problem() {
  opt::ProblemContext p;
  p.backend = "triton";
  p.inspect = {{"flops", 2e6}, {"bytes", 8e6}};
  return p;
}

// A correct evaluation whose roofline says "memory-bound, far from the ceiling".
json result_with(json profile) {
  return {{"verdict", "correct"},
          {"runtime_us", {{"median", 40.0}}},
          {"roofline",
           {{"flops", 2e6},
            {"bytes", 8e6},
            {"bandwidth_bytes_per_s", 4e12},
            {"peak_flops", 6e13},
            {"fraction_of_speed_of_light", 0.05}}},
          {"profile", std::move(profile)}};
}

}  // namespace

TEST(ProfileClassify, ReadsTheDominantKernelsUnits) {
  auto b = prof::classify(memory_bound());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, "memory");
  EXPECT_EQ(b->numbers["dram_throughput_pct"], 88.0);
  EXPECT_EQ(b->numbers["kernel"], "softmax_kernel");
  EXPECT_NE(b->evidence[0].find("DRAM 88%"), std::string::npos) << b->evidence[0];

  b = prof::classify(deep({{"dram_throughput_pct", 10.0},
                           {"sm_throughput_pct", 75.0},
                           {"tensor_utilisation_pct", 2.0},
                           {"achieved_occupancy_pct", 60.0},
                           {"roofline", {{"intensity_flop_per_byte", 200.0}}}}));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, "compute");
  EXPECT_NE(b->suggestions[0].action.find("tensor cores"), std::string::npos);

  b = prof::classify(low_occupancy());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, "occupancy");
  EXPECT_NE(b->suggestions[0].rationale.find("registers limit occupancy (168"), std::string::npos);

  b = prof::classify(deep({{"dram_throughput_pct", 30.0},
                           {"sm_throughput_pct", 25.0},
                           {"achieved_occupancy_pct", 70.0},
                           {"top_stalls", json::array({{{"reason", "barrier"}, {"share", 0.5}}})},
                           {"local_memory", {{"spilling", true}}}}));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, "latency");
  EXPECT_NE(b->suggestions[0].rationale.find("barriers"), std::string::npos);
  EXPECT_NE(b->suggestions.back().action.find("spills"), std::string::npos);
}

TEST(ProfileClassify, LongestKernelDecides) {
  json p = memory_bound();
  json big = low_occupancy()["kernel_metrics"][0];
  big["name"] = "gemm_kernel";
  big["duration_us"] = 150.0;
  p["kernel_metrics"].push_back(big);
  auto b = prof::classify(p);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, "occupancy");
  EXPECT_EQ(b->numbers["kernel"], "gemm_kernel");
  EXPECT_DOUBLE_EQ(b->numbers["share_of_profiled_time"].get<double>(), 0.75);
}

TEST(ProfileClassify, NothingToReadGivesNoClass) {
  EXPECT_FALSE(prof::classify(json()));
  EXPECT_FALSE(prof::classify(json::array()));
  EXPECT_FALSE(prof::classify({{"tier", "basic"}, {"kernel_table", json::array()}}));
  json proton = memory_bound();
  proton["tier"] = "proton";  // times only: no throughput figures are claimed
  EXPECT_FALSE(prof::classify(proton));
  EXPECT_FALSE(prof::classify(deep({{"achieved_occupancy_pct", 10.0}})));  // no throughput
  json odd = memory_bound();
  odd["kernel_metrics"][0]["dram_throughput_pct"] = "88";  // malformed: not a number
  odd["kernel_metrics"].push_back(7);
  EXPECT_NO_THROW(prof::classify(odd));
  // Wrong types anywhere: no class, no exception (a stored result is data).
  json bad = {{"tier", 3},
              {"requested_tier", json::array()},
              {"flags", {{{"flag", 1}, {"message", json::object()}}, "x"}},
              {"tool", "ncu"},
              {"cached", "yes"},
              {"kernel_metrics", {{{"name", 5}, {"top_stalls", 2}}}}};
  json d = {{"bottleneck", 1}, {"evidence", "e"}, {"expected_gain", "big"}};
  EXPECT_NO_THROW(prof::format_profile(bad));
  EXPECT_NO_THROW(prof::refine_diagnosis(d, bad));
  bad["tier"] = "deep";
  bad["kernel_metrics"][0]["dram_throughput_pct"] = 90.0;
  bad["kernel_metrics"][0]["occupancy_limiter"] = {{"by", 7}};
  EXPECT_NO_THROW(prof::format_profile(bad));
  EXPECT_NO_THROW(prof::refine_diagnosis(d, bad));
  EXPECT_EQ(d["metrics"]["kernel"], "");
}

TEST(ProfileCritic, DiagnosisChangesWithTheMetrics) {
  opt::Attempt a;
  a.verdict = "correct";
  // Without a deep profile: the roofline's guess.
  auto plain = opt::heuristic_diagnosis(problem(), a, result_with({{"tier", "basic"}}));
  EXPECT_EQ(plain["bottleneck"], "occupancy");
  EXPECT_FALSE(plain.contains("metrics"));
  // The same run with ncu saying DRAM is at 88% of peak: memory-bound after all.
  auto mem = opt::heuristic_diagnosis(problem(), a, result_with(memory_bound()));
  EXPECT_EQ(mem["bottleneck"], "memory");
  EXPECT_EQ(mem["metrics"]["dram_throughput_pct"], 88.0);
  EXPECT_TRUE(ok::llm::validate_json(mem, opt::diagnosis_schema()).empty());
  // ncu saying 18% occupancy limited by registers: an occupancy move naming registers.
  auto occ = opt::heuristic_diagnosis(problem(), a, result_with(low_occupancy()));
  EXPECT_EQ(occ["bottleneck"], "occupancy");
  EXPECT_NE(occ["suggestions"][0]["action"].get<std::string>().find("registers"),
            std::string::npos);
  EXPECT_EQ(occ["metrics"]["occupancy_limiter"], "registers");
  EXPECT_TRUE(ok::llm::validate_json(occ, opt::diagnosis_schema()).empty());
}

TEST(ProfileCritic, LimitsBecomeEvidenceNotFailures) {
  opt::Attempt a;
  json p = {{"tier", "basic"},
            {"requested_tier", "deep"},
            {"flags", json::array({{{"flag", "counters_not_permitted"},
                                    {"message", "ncu may not read the GPU's counters"}}})}};
  auto d = opt::heuristic_diagnosis(problem(), a, result_with(p));
  EXPECT_EQ(d["bottleneck"], "occupancy");  // the roofline's class stands
  EXPECT_NE(d["evidence"].dump().find("counters_not_permitted"), std::string::npos);
  json failed = {{"verdict", "incorrect"}, {"profile", memory_bound()}};
  EXPECT_EQ(opt::heuristic_diagnosis(problem(), a, failed)["bottleneck"], "correctness");
}

TEST(ProfileReport, NamesTheTierItsCostAndItsLimits) {
  std::string text = prof::format_profile(memory_bound());
  EXPECT_NE(text.find("profile   deep tier (ncu), 9.5 s"), std::string::npos) << text;
  EXPECT_NE(text.find("top kernel softmax_kernel: 50.0 us, DRAM 88%"), std::string::npos) << text;
  EXPECT_NE(text.find("bottleneck memory"), std::string::npos) << text;
  EXPECT_EQ(prof::format_profile({{"tier", "basic"}, {"kernel_table", json::array()}}), "");
  json limited = {{"tier", "basic"},
                  {"requested_tier", "deep"},
                  {"seconds", 0.0},
                  {"flags", json::array({{{"flag", "no_gpu"}, {"message", "CPU"}}})}};
  text = prof::format_profile(limited);
  EXPECT_NE(text.find("profile   basic tier, 0.0 s"), std::string::npos) << text;
  EXPECT_NE(text.find("  - profile no_gpu: CPU"), std::string::npos) << text;
}

TEST(ProfileRequest, TierSentOnlyAboveBasic) {
  ok::eval::EvalRequest r;
  EXPECT_FALSE(ok::eval::to_json(r).contains("profile"));
  r.profile = "deep";
  EXPECT_EQ(ok::eval::to_json(r)["profile"], "deep");
  EXPECT_TRUE(prof::is_tier("proton"));
  EXPECT_FALSE(prof::is_tier("full"));
}
