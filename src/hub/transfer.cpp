// Client's transfers of file contents: LFS uploads and resumable, checked downloads.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "hub/client.hpp"
#include "hub/oid.hpp"
#include "util/digest.hpp"
#include "util/paths.hpp"

namespace ok::hub {

using json = nlohmann::json;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> action_headers(const json& action) {
  std::vector<std::string> out;
  if (action.contains("header") && action["header"].is_object())
    for (const auto& [name, value] : action["header"].items())
      if (value.is_string()) out.push_back(name + ": " + value.get<std::string>());
  return out;
}

util::Result<void> hash_lfs(CommitFile& f) {
  if (!f.sha256.empty()) return {};
  if (f.source.empty()) {
    f.sha256 = util::sha256_hex(f.content);
    return {};
  }
  auto sha = util::sha256_file(f.source);
  if (!sha) return std::unexpected(sha.error());
  f.sha256 = *sha;
  return {};
}

}  // namespace

util::Result<int> Client::upload_lfs(const RepoId& repo, const std::string& rev,
                                     std::vector<CommitFile>& files) {
  std::vector<CommitFile*> lfs;
  for (auto& f : files)
    if (f.lfs) {
      if (auto ok = hash_lfs(f); !ok) return std::unexpected(ok.error());
      lfs.push_back(&f);
    }
  int uploaded = 0;
  const std::string batch_url = repo_url(repo) + ".git/info/lfs/objects/batch";
  for (size_t start = 0; start < lfs.size(); start += 100) {
    json objects = json::array();
    for (size_t i = start; i < std::min(lfs.size(), start + 100); ++i)
      objects.push_back({{"oid", lfs[i]->sha256}, {"size", lfs[i]->size}});
    const std::string body = json{
        {"operation", "upload"},
        {"transfers", {"basic"}},
        {"hash_algo", "sha_256"},
        {"ref", {{"name", rev}}},
        {"objects", objects}}.dump();
    auto res = call(
        [&] {
          return HttpRequest{"POST",
                             batch_url,
                             {"Accept: application/vnd.git-lfs+json",
                              "Content-Type: application/vnd.git-lfs+json"},
                             body};
        },
        fmt::format("the LFS batch request for {}", repo.name));
    if (!res) return std::unexpected(res.error());
    const auto answer = json::parse(res->body, nullptr, false);
    if (!answer.is_object() || !answer.contains("objects") || !answer["objects"].is_array())
      return util::fail(ErrorKind::kProtocol, "the Hub's LFS batch answer has no objects");
    for (const auto& obj : answer["objects"]) {
      const std::string oid = obj.value("oid", std::string());
      auto it = std::find_if(lfs.begin(), lfs.end(), [&](auto* f) { return f->sha256 == oid; });
      if (it == lfs.end())
        return util::fail(ErrorKind::kProtocol, "the LFS batch answered an object not asked for");
      if (obj.contains("error"))
        return util::fail(ErrorKind::kProtocol,
                          fmt::format("the Hub refused the LFS object of {}: {}", (*it)->path,
                                      obj["error"].dump()));
      if (!obj.contains("actions") || !obj["actions"].contains("upload"))
        continue;  // already there
      const auto& actions = obj["actions"];
      const CommitFile& f = **it;
      auto put = call(
          [&] {
            HttpRequest req{"PUT", actions["upload"].value("href", std::string()),
                            action_headers(actions["upload"])};
            if (f.source.empty()) req.body = f.content;
            req.upload_file = f.source;
            return req;
          },
          fmt::format("uploading {} ({} bytes) to LFS storage", f.path, f.size), false);
      if (!put) return std::unexpected(put.error());
      if (actions.contains("verify")) {
        auto headers = action_headers(actions["verify"]);
        headers.push_back("Content-Type: application/vnd.git-lfs+json");
        const std::string check = json{{"oid", f.sha256}, {"size", f.size}}.dump();
        auto ok = call(
            [&] {
              return HttpRequest{"POST", actions["verify"].value("href", std::string()), headers,
                                 check};
            },
            fmt::format("verifying the LFS upload of {}", f.path), false);
        if (!ok) return std::unexpected(ok.error());
      }
      ++uploaded;
    }
  }
  return uploaded;
}

util::Result<std::string> Client::download(const RepoId& repo, const std::string& rev,
                                           const TreeEntry& entry, const fs::path& dest) {
  std::error_code ec;
  fs::create_directories(dest.parent_path(), ec);
  const fs::path part = dest.string() + ".incomplete";
  const std::string url = fmt::format("{}/resolve/{}/{}", repo_url(repo), url_encode(rev, false),
                                      url_encode(entry.path, true));
  auto have = [&] {
    std::error_code e;
    const auto n = fs::file_size(part, e);
    return e ? uint64_t{0} : static_cast<uint64_t>(n);
  };
  if (have() > entry.size) fs::remove(part, ec);
  std::string commit;
  if (have() < entry.size || entry.size == 0) {
    auto res = call(
        [&] {
          HttpRequest req{"GET", url};
          req.download_to = part;
          req.follow_redirects = true;
          if (const auto n = have(); n > 0) {
            req.headers.push_back(fmt::format("Range: bytes={}-", n));
            req.append = true;
          }
          return req;
        },
        fmt::format("downloading {} from {}", entry.path, repo.name));
    if (!res) return std::unexpected(res.error());
    if (entry.size == 0 && !fs::exists(part)) util::write_file(part, "");
    if (auto it = res->headers.find("x-repo-commit"); it != res->headers.end()) commit = it->second;
  }
  auto sum = entry.lfs_sha256 ? util::sha256_file(part) : git_blob_sha1_file(part);
  if (!sum) return std::unexpected(sum.error());
  const std::string& want = entry.lfs_sha256 ? *entry.lfs_sha256 : entry.oid;
  if (*sum != want) {
    fs::remove(part, ec);
    return util::fail(
        ErrorKind::kProtocol,
        fmt::format("{}: the downloaded content does not match its checksum ({} {}, "
                    "got {}); the partial file was removed, run again",
                    entry.path, entry.lfs_sha256 ? "sha256" : "git sha1", want, *sum));
  }
  fs::rename(part, dest, ec);
  if (ec)
    return util::fail(ErrorKind::kBadInput,
                      fmt::format("cannot write {}: {}", dest.string(), ec.message()));
  return commit;
}

}  // namespace ok::hub
