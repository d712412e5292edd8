#include "hub/oid.hpp"

#include <fmt/format.h>

#include "util/digest.hpp"

namespace ok::hub {

namespace {

std::string blob_header(uint64_t size) {
  return fmt::format("blob {}", size) + '\0';
}

}  // namespace

std::string git_blob_sha1(std::string_view data) {
  util::Digest d(util::Digest::Algorithm::kSha1);
  d.update(blob_header(data.size()));
  d.update(data);
  return d.hex();
}

util::Result<std::string> git_blob_sha1_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return util::fail(util::ErrorKind::kBadInput, "cannot read " + path.string());
  util::Digest d(util::Digest::Algorithm::kSha1);
  d.update(blob_header(size));
  return d.file_hex(path);
}

std::string lfs_pointer(std::string_view sha256, uint64_t size) {
  return fmt::format("version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize {}\n", sha256,
                     size);
}

}  // namespace ok::hub
