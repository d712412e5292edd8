#include "skills/bm25.hpp"

#include <cctype>
#include <cmath>
#include <set>

namespace ok::skills {

std::vector<std::string> tokenize(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

Bm25::Bm25(const std::vector<std::string>& documents, double k1, double b) : k1_(k1), b_(b) {
  double total = 0;
  for (const auto& d : documents) {
    std::map<std::string, int> counts;
    auto tokens = tokenize(d);
    for (const auto& t : tokens) ++counts[t];
    for (const auto& [t, n] : counts) ++document_frequency_[t];
    lengths_.push_back(static_cast<int>(tokens.size()));
    total += static_cast<double>(tokens.size());
    terms_.push_back(std::move(counts));
  }
  avg_length_ = documents.empty() ? 0 : total / static_cast<double>(documents.size());
}

std::vector<double> Bm25::score(std::string_view query) const {
  std::vector<double> out(terms_.size(), 0.0);
  const auto tokens = tokenize(query);
  const std::set<std::string> unique(tokens.begin(), tokens.end());
  const double n_docs = static_cast<double>(terms_.size());
  for (const auto& t : unique) {
    auto df = document_frequency_.find(t);
    if (df == document_frequency_.end()) continue;
    const double idf = std::log(1.0 + (n_docs - df->second + 0.5) / (df->second + 0.5));
    for (size_t d = 0; d < terms_.size(); ++d) {
      auto tf = terms_[d].find(t);
      if (tf == terms_[d].end()) continue;
      const double f = tf->second;
      const double norm = avg_length_ > 0 ? lengths_[d] / avg_length_ : 1.0;
      out[d] += idf * f * (k1_ + 1) / (f + k1_ * (1 - b_ + b_ * norm));
    }
  }
  return out;
}

}  // namespace ok::skills
