#include "util/digest.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <array>
#include <fstream>

namespace ok::util {

struct Digest::Context {
  struct Free {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> md{EVP_MD_CTX_new()};
};

Digest::Digest(Algorithm algorithm) : ctx_(std::make_unique<Context>()) {
  EVP_DigestInit_ex(ctx_->md.get(), algorithm == Algorithm::kSha1 ? EVP_sha1() : EVP_sha256(),
                    nullptr);
}

Digest::~Digest() = default;

void Digest::update(std::string_view data) {
  EVP_DigestUpdate(ctx_->md.get(), data.data(), data.size());
}

std::string Digest::hex() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx_->md.get(), out.data(), &len);
  std::string text;
  for (unsigned i = 0; i < len; ++i) text += fmt::format("{:02x}", out[i]);
  return text;
}

Result<std::string> Digest::file_hex(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorKind::kBadInput, "cannot read " + path.string());
  std::string buf(1 << 20, '\0');
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    update(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) return fail(ErrorKind::kBadInput, "cannot read " + path.string());
  return hex();
}

std::string sha256_hex(std::string_view data) {
  Digest d(Digest::Algorithm::kSha256);
  d.update(data);
  return d.hex();
}

Result<std::string> sha256_file(const std::filesystem::path& path) {
  Digest d(Digest::Algorithm::kSha256);
  return d.file_hex(path);
}

namespace {
constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}  // namespace

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

}  // namespace ok::util
