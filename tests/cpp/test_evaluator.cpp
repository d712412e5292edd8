// The evaluation request the engine sends the worker and the report it prints from the result.
#include <gtest/gtest.h>

#include "eval/evaluator.hpp"

using nlohmann::json;
using ok::eval::EvalRequest;

TEST(EvalRequestJson, TimingModesAreSentOnlyWhenNotAuto) {
  EvalRequest r;
  r.reference = "ref.py";
  r.candidate = "cand.py";
  json j = ok::eval::to_json(r);
  EXPECT_EQ(j["op"], "evaluate");
  EXPECT_FALSE(j.contains("rested"));
  EXPECT_FALSE(j.contains("cuda_graph"));
  r.rested = "off";
  r.cuda_graph = "on";
  j = ok::eval::to_json(r);
  EXPECT_EQ(j["rested"], "off");
  EXPECT_EQ(j["cuda_graph"], "on");
}

TEST(EvalReport, NamesTheTimingMethod) {
  json r = {{"verdict", "correct"},
            {"speedup", 1.25},
            {"runtime_us",
             {{"median", 800.0}, {"mean", 801.0}, {"stderr", 1.0}, {"min", 790.0}, {"n", 40}}},
            {"ref_runtime_us", json(nullptr)},
            {"max_abs_error", 0.0},
            {"max_rel_error", 0.0},
            {"device", "cuda:0"},
            {"backend", "triton"},
            {"timing", {{"mode", "events_rested"}}}};
  std::string text = ok::eval::format_report(r);
  EXPECT_NE(text.find("rested (an idle gap before each call)"), std::string::npos) << text;
  EXPECT_NE(text.find("speedup   1.250x"), std::string::npos) << text;
  r["timing"]["mode"] = "cuda_graph";
  EXPECT_NE(ok::eval::format_report(r).find("CUDA-graph replay"), std::string::npos);
  r["timing"]["mode"] = 3;  // malformed: still a report, not an exception
  EXPECT_NE(ok::eval::format_report(r).find("CUDA events / clock per call"), std::string::npos);
}
