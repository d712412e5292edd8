// Code extraction from a model's reply: fenced blocks (``` or ~~~) amid prose, several of them,
// the last one possibly cut off by the output limit.
//
// Pure functions over text; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ok::llm {

struct CodeBlock {
  std::string lang;    // the info string's first word, lower-case; empty when none
  std::string code;    // the lines between the fences, without the fences
  bool closed = true;  // false when the reply ended inside the block
};

std::vector<CodeBlock> code_blocks(std::string_view text);

// The block that holds the program: among blocks in `lang` (or unlabelled; any block when none
// is), the last closed one containing `class ModelNew`, else the longest (the later on a tie).
// With no fences, the whole text when it contains `class ModelNew`. nullopt when nothing fits.
std::optional<CodeBlock> extract_code(std::string_view text, std::string_view lang = "python");

}  // namespace ok::llm
