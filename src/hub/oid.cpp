#include "hub/oid.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <array>
#include <fstream>
#include <memory>

namespace ok::hub {

namespace {

struct DigestFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

// Incremental digest over OpenSSL's EVP interface.
class Digest {
 public:
  explicit Digest(const EVP_MD* md) : ctx_(EVP_MD_CTX_new()) {
    EVP_DigestInit_ex(ctx_.get(), md, nullptr);
  }
  void update(std::string_view data) { EVP_DigestUpdate(ctx_.get(), data.data(), data.size()); }
  std::string hex() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
    unsigned len = 0;
    EVP_DigestFinal_ex(ctx_.get(), out.data(), &len);
    std::string text;
    for (unsigned i = 0; i < len; ++i) text += fmt::format("{:02x}", out[i]);
    return text;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, DigestFree> ctx_;
};

util::Result<std::string> digest_file(const std::filesystem::path& path, Digest& d) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return util::fail(util::ErrorKind::kBadInput, "cannot read " + path.string());
  std::string buf(1 << 20, '\0');
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    d.update(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) return util::fail(util::ErrorKind::kBadInput, "cannot read " + path.string());
  return d.hex();
}

std::string blob_header(uint64_t size) {
  return fmt::format("blob {}", size) + '\0';
}

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string sha256_hex(std::string_view data) {
  Digest d(EVP_sha256());
  d.update(data);
  return d.hex();
}

std::string git_blob_sha1(std::string_view data) {
  Digest d(EVP_sha1());
  d.update(blob_header(data.size()));
  d.update(data);
  return d.hex();
}

util::Result<std::string> sha256_file(const std::filesystem::path& path) {
  Digest d(EVP_sha256());
  return digest_file(path, d);
}

util::Result<std::string> git_blob_sha1_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return util::fail(util::ErrorKind::kBadInput, "cannot read " + path.string());
  Digest d(EVP_sha1());
  d.update(blob_header(size));
  return digest_file(path, d);
}

std::string lfs_pointer(std::string_view sha256, uint64_t size) {
  return fmt::format("version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize {}\n", sha256,
                     size);
}

std::string base64_encode(std::string_view data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    const uint32_t v =
        (uint8_t(data[i]) << 16) | (uint8_t(data[i + 1]) << 8) | uint8_t(data[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i < data.size()) {
    uint32_t v = uint8_t(data[i]) << 16;
    if (i + 1 < data.size()) v |= uint8_t(data[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < data.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ') continue;
    const auto pos = kAlphabet.find(c);
    if (pos == std::string_view::npos) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace ok::hub
