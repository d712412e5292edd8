// The object ids the Hub and git use, built on util/digest.hpp's digests (which the Hub's code
// calls directly for an LFS object's SHA-256 and the commit API's base64).
//
// An LFS object's oid is the SHA-256 of its content; a regular file's oid is its git blob id,
// SHA-1 of "blob <size>\0" followed by the content; an LFS file's entry in a git tree is the blob
// id of its pointer text (lfs_pointer). Files are hashed streaming, in constant memory. Pure
// functions, thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace ok::hub {

std::string git_blob_sha1(std::string_view data);
util::Result<std::string> git_blob_sha1_file(const std::filesystem::path& path);

// The git-lfs pointer file of an object (spec v1).
std::string lfs_pointer(std::string_view sha256, uint64_t size);

}  // namespace ok::hub
