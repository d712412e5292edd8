#include <gtest/gtest.h>

#include "llm/extract.hpp"

namespace ok::llm {
namespace {

TEST(LlmExtract, OneBlockAmidProse) {
  const std::string reply =
      "Here is the kernel:\n\n```python\nimport torch\nclass ModelNew:\n    pass\n```\n\nIt fuses "
      "the ops.";
  auto b = extract_code(reply);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->lang, "python");
  EXPECT_EQ(b->code, "import torch\nclass ModelNew:\n    pass\n");
  EXPECT_TRUE(b->closed);
}

TEST(LlmExtract, PrefersTheBlockWithModelNew) {
  const std::string reply =
      "First the reference:\n```python\nclass Model:\n    def forward(self, x):\n        return "
      "torch.relu(x) + some_long_expression_to_make_this_longer(x)\n```\n"
      "Now mine:\n```py\nclass ModelNew:\n    pass\n```\n"
      "And a usage example:\n```python\nm = ModelNew()\n```\n";
  auto b = extract_code(reply);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->code, "class ModelNew:\n    pass\n");
}

TEST(LlmExtract, LastOfSeveralModelNewBlocks) {
  const std::string reply =
      "```python\nclass ModelNew:  # draft\n    pass\n```\nFixed:\n```python\nclass ModelNew:  # "
      "final\n    pass\n```\n";
  auto b = extract_code(reply);
  ASSERT_TRUE(b);
  EXPECT_NE(b->code.find("final"), std::string::npos);
}

TEST(LlmExtract, LongestBlockWithoutModelNew) {
  const std::string reply = "```python\na = 1\n```\n```python\nb = 2\nc = 3\n```\n```\nd=4\n```";
  auto b = extract_code(reply);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->code, "b = 2\nc = 3\n");
}

TEST(LlmExtract, SkipsBlocksInOtherLanguages) {
  const std::string reply =
      "```cuda\n__global__ void k(float* x) { /* a long CUDA kernel body here */ }\n```\n"
      "```python\nx = 1\n```\n";
  auto b = extract_code(reply);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->code, "x = 1\n");
  auto cu = extract_code(reply, "cuda");
  ASSERT_TRUE(cu);
  EXPECT_EQ(cu->lang, "cuda");
}

TEST(LlmExtract, FallsBackToAnyBlockWhenNoneMatchesTheLanguage) {
  auto b = extract_code("```cpp\nint main() {}\n```\n", "python");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->code, "int main() {}\n");
}

TEST(LlmExtract, UnclosedBlockCutByTheOutputLimit) {
  auto b = extract_code("Sure.\n```python\nclass ModelNew:\n    def forward(self");
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->closed);
  EXPECT_EQ(b->code, "class ModelNew:\n    def forward(self\n");
}

TEST(LlmExtract, ClosedModelNewBlockBeatsATruncatedOne) {
  auto b = extract_code("```python\nclass ModelNew: pass\n```\n```python\nclass ModelNew: par");
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->closed);
}

TEST(LlmExtract, TildesLongFencesIndentationAndCrlf) {
  auto blocks = code_blocks(
      "~~~Python {.numberLines}\r\na = '```'\r\n~~~\r\n  ````\r\n```inner```\r\n  ````\r\n");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].lang, "python");
  EXPECT_EQ(blocks[0].code, "a = '```'\n");
  EXPECT_EQ(blocks[1].code, "```inner```\n");
}

TEST(LlmExtract, InlineTriplesAreNotFences) {
  EXPECT_TRUE(code_blocks("```python``` marks a block, said the prose").empty());
}

TEST(LlmExtract, BareCodeWithModelNew) {
  auto b = extract_code("import torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n\n");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->code, "import torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n");
}

TEST(LlmExtract, NothingToExtract) {
  EXPECT_FALSE(extract_code("I cannot help with that."));
  EXPECT_FALSE(extract_code(""));
}

}  // namespace
}  // namespace ok::llm
