#include <gtest/gtest.h>

#include "llm/json_schema.hpp"

namespace ok::llm {
namespace {

using nlohmann::json;

const json kSchema = json::parse(R"({
  "type": "object",
  "required": ["diagnosis", "steps"],
  "properties": {
    "diagnosis": {"type": "string", "enum": ["memory", "compute", "latency"]},
    "confidence": {"type": "number"},
    "steps": {"type": "array", "items": {
      "type": "object", "required": ["name"],
      "properties": {"name": {"type": "string"}, "tile": {"type": ["integer", "null"]}}}}
  }
})");

TEST(LlmJsonSchema, AcceptsAConformingValue) {
  const json v = json::parse(
      R"({"diagnosis": "memory", "confidence": 1, "steps": [{"name": "fuse", "tile": 64},
          {"name": "vectorise", "tile": null}], "extra": true})");
  EXPECT_TRUE(validate_json(v, kSchema).empty());
}

TEST(LlmJsonSchema, ReportsEveryViolationWithItsPath) {
  const json v =
      json::parse(R"({"diagnosis": "vibes", "confidence": "high", "steps": [{"tile": 1.5}, 3]})");
  const auto errs = validate_json(v, kSchema);
  ASSERT_EQ(errs.size(), 5u);
  // Properties are checked in name order.
  EXPECT_EQ(errs[0], "$.confidence: expected number, got string");
  EXPECT_EQ(errs[1], R"($.diagnosis: "vibes" is not one of ["memory","compute","latency"])");
  EXPECT_EQ(errs[2], "$.steps[0]: missing required property \"name\"");
  EXPECT_EQ(errs[3], "$.steps[0].tile: expected integer or null, got number");
  EXPECT_EQ(errs[4], "$.steps[1]: expected object, got integer");
}

TEST(LlmJsonSchema, MissingRequiredAndWrongTopType) {
  EXPECT_EQ(validate_json(json::object(), kSchema).size(), 2u);
  const auto errs = validate_json(json::array(), kSchema);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0], "$: expected object, got array");
}

TEST(LlmJsonSchema, IntegralFloatCountsAsInteger) {
  EXPECT_TRUE(validate_json(json(4.0), json{{"type", "integer"}}).empty());
  EXPECT_FALSE(validate_json(json(4.5), json{{"type", "integer"}}).empty());
  EXPECT_TRUE(validate_json(json(4), json{{"type", "number"}}).empty());
  EXPECT_FALSE(validate_json(json(true), json{{"type", "number"}}).empty());
}

TEST(LlmJsonReply, PlainJson) {
  auto v = parse_json_reply(" {\"a\": 1} ");
  ASSERT_TRUE(v);
  EXPECT_EQ((*v)["a"], 1);
}

TEST(LlmJsonReply, FencedJsonAmidProse) {
  auto v = parse_json_reply("Here you go:\n```json\n{\"a\": [1, 2]}\n```\nDone.");
  ASSERT_TRUE(v);
  EXPECT_EQ((*v)["a"].size(), 2u);
}

TEST(LlmJsonReply, BareObjectAmidProse) {
  auto v = parse_json_reply("The answer is {\"a\": {\"b\": 2}} as requested.");
  ASSERT_TRUE(v);
  EXPECT_EQ((*v)["a"]["b"], 2);
  auto arr = parse_json_reply("List: [1, 2, 3].");
  ASSERT_TRUE(arr);
  EXPECT_EQ(arr->size(), 3u);
}

TEST(LlmJsonReply, MalformedInputsFail) {
  for (const char* bad : {"", "no json here", "{\"a\": ", "```json\n{oops}\n```", "}{", "[1, 2"}) {
    auto v = parse_json_reply(bad);
    ASSERT_FALSE(v) << bad;
    EXPECT_EQ(v.error().kind, util::ErrorKind::kProtocol);
  }
}

}  // namespace
}  // namespace ok::llm
