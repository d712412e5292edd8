// Content digests and base64, for everything that names bytes by their hash: the store's source
// hashes, the remote worker's package and staged files, the Hub's object ids (src/hub/oid.hpp
// builds git's and LFS's ids on these).
//
// SHA-256 and SHA-1 through OpenSSL's EVP interface; files are hashed streaming, in constant
// memory. Pure functions, thread-safe.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace ok::util {

// An incremental digest: update() any number of times, then hex() once.
class Digest {
 public:
  enum class Algorithm { kSha256, kSha1 };
  explicit Digest(Algorithm algorithm);
  ~Digest();
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;
  void update(std::string_view data);
  std::string hex();
  // Feeds the whole file; an error names it when it cannot be read.
  Result<std::string> file_hex(const std::filesystem::path& path);

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
};

std::string sha256_hex(std::string_view data);
Result<std::string> sha256_file(const std::filesystem::path& path);

std::string base64_encode(std::string_view data);
// Nullopt on a character outside the standard alphabet (white space is skipped).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace ok::util
