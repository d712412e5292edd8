#include "llm/extract.hpp"

#include <algorithm>
#include <cctype>

namespace ok::llm {

namespace {

std::string_view ltrim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

std::string_view rtrim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

size_t run_of(std::string_view s, char c) {
  size_t n = 0;
  while (n < s.size() && s[n] == c) ++n;
  return n;
}

bool lang_matches(std::string_view block, std::string_view want) {
  if (block == want) return true;
  if (want == "python") return block == "py" || block == "python3";
  if (want == "cpp" || want == "c++") return block == "cpp" || block == "c++" || block == "cc";
  if (want == "cuda") return block == "cu";
  return false;
}

}  // namespace

std::vector<CodeBlock> code_blocks(std::string_view text) {
  std::vector<CodeBlock> out;
  bool inside = false;
  char fence = 0;
  size_t fence_len = 0;
  CodeBlock cur;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string_view t = ltrim(line);
    if (!inside) {
      const char c = t.empty() ? 0 : t.front();
      const size_t n = (c == '`' || c == '~') ? run_of(t, c) : 0;
      const std::string_view info = n >= 3 ? rtrim(ltrim(t.substr(n))) : std::string_view{};
      if (n >= 3 && !(c == '`' && info.find('`') != std::string_view::npos)) {
        inside = true;
        fence = c;
        fence_len = n;
        cur = CodeBlock{};
        const auto word_end = info.find_first_of(" \t{");
        for (char ch : info.substr(0, word_end))
          cur.lang.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
      }
    } else if (run_of(t, fence) >= fence_len && rtrim(t.substr(run_of(t, fence))).empty()) {
      inside = false;
      out.push_back(std::move(cur));
    } else {
      cur.code.append(line);
      cur.code.push_back('\n');
    }
    pos = end + 1;
  }
  if (inside) {
    cur.closed = false;
    out.push_back(std::move(cur));
  }
  return out;
}

std::optional<CodeBlock> extract_code(std::string_view text, std::string_view lang) {
  const std::vector<CodeBlock> blocks = code_blocks(text);
  std::vector<const CodeBlock*> pool;
  for (const auto& b : blocks)
    if (b.lang.empty() || lang_matches(b.lang, lang)) pool.push_back(&b);
  if (pool.empty())
    for (const auto& b : blocks) pool.push_back(&b);
  if (pool.empty()) {
    if (text.find("class ModelNew") == std::string_view::npos) return std::nullopt;
    return CodeBlock{std::string(lang), std::string(rtrim(text)) + "\n", true};
  }
  const CodeBlock* best = nullptr;
  for (const CodeBlock* b : pool)
    if (b->closed && b->code.find("class ModelNew") != std::string::npos) best = b;
  if (!best)
    for (const CodeBlock* b : pool)
      if (b->code.find("class ModelNew") != std::string::npos) best = b;
  if (!best)
    for (const CodeBlock* b : pool)
      if (!best || b->code.size() >= best->code.size()) best = b;
  return *best;
}

}  // namespace ok::llm
