// BM25 (Okapi) over a small corpus of short documents, for ranking skills by their text.
//
// Tokens are lower-case runs of letters and digits (other bytes split them). score() gives each
// document's BM25 for a query with k1 = 1.2 and b = 0.75 and the usual idf
// ln(1 + (N - n + 0.5) / (n + 0.5)), so a term in every document still counts a little.
// Immutable after construction; thread-safe to read.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ok::skills {

std::vector<std::string> tokenize(std::string_view text);

class Bm25 {
 public:
  explicit Bm25(const std::vector<std::string>& documents, double k1 = 1.2, double b = 0.75);
  // One score per document, in the order given.
  std::vector<double> score(std::string_view query) const;

 private:
  double k1_, b_, avg_length_ = 0;
  std::vector<std::map<std::string, int>> terms_;  // per document: term -> count
  std::vector<int> lengths_;
  std::map<std::string, int> document_frequency_;
};

}  // namespace ok::skills
