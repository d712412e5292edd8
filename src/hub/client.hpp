// The subset of the Hugging Face Hub HTTP API that `openkernel hub` uses (docs/hub.md): create a
// repository or branch, preupload (which files go through LFS), the LFS batch API with the basic
// transfer (PUT to the returned href, then verify), the NDJSON commit API, tree listing, revision
// lookup and resolve downloads (redirects followed, Range resumes).
//
// Every call retries network failures, 429 and 5xx with exponential backoff (or the server's
// Retry-After), `Settings::retries` times; 401, 403 and 404 are not retried. Failures come back as
// errors whose message says what was refused and what to do: kAuth (401, 403), kNetwork (404,
// network), kRateLimited (429), kServer (5xx), kProtocol (a malformed reply, a checksum mismatch).
// The token is sent only to the endpoint, never to an LFS upload href, and never appears in a
// message. One Client per thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hub/http.hpp"
#include "hub/settings.hpp"
#include "util/error.hpp"

namespace ok::hub {

enum class RepoType { kModel, kDataset };

struct RepoId {
  RepoType type = RepoType::kModel;
  std::string name;  // ORG/NAME
};

// Checks ORG/NAME (letters, digits, '-', '_', '.'; no "..", no leading or trailing '-' or '.').
util::Result<RepoId> parse_repo(std::string_view name, RepoType type);
std::string type_word(RepoType type);  // "model" or "dataset"

// One file of a commit: its content given inline or as a file on disk.
struct CommitFile {
  std::string path;  // in the repository, '/'-separated
  std::filesystem::path source;
  std::string content;  // used when source is empty
  uint64_t size = 0;
  bool lfs = false;
  std::string sha256;  // set for LFS files before upload
};

struct TreeEntry {
  std::string path, oid;  // oid: git blob id (of the pointer text for LFS files)
  uint64_t size = 0;
  std::optional<std::string> lfs_sha256;
};

struct CommitInfo {
  std::string oid, url;
};

class Client {
 public:
  explicit Client(Settings settings) : settings_(std::move(settings)) {}
  const Settings& settings() const { return settings_; }

  // Creates the repository; one that exists already is fine.
  util::Result<void> create_repo(const RepoId& repo, bool is_private);
  // Creates `branch` from main unless it exists.
  util::Result<void> create_branch(const RepoId& repo, const std::string& branch);
  // Asks the Hub which files go through LFS; sets CommitFile::lfs (also true above lfs_bytes).
  util::Result<void> preupload(const RepoId& repo, const std::string& rev,
                               std::vector<CommitFile>& files, uint64_t lfs_bytes);
  // Hashes and uploads the LFS files the Hub lacks (batch, PUT, verify).
  util::Result<int> upload_lfs(const RepoId& repo, const std::string& rev,
                               std::vector<CommitFile>& files);
  util::Result<CommitInfo> commit(const RepoId& repo, const std::string& rev,
                                  const std::string& summary, const std::vector<CommitFile>& files);
  // The commit id a revision (branch, tag or commit) points to.
  util::Result<std::string> revision_sha(const RepoId& repo, const std::string& rev);
  // Every file under `path` (recursive; empty path: the whole repository).
  util::Result<std::vector<TreeEntry>> list_tree(const RepoId& repo, const std::string& rev,
                                                 const std::string& path);
  // Downloads a file to `dest`, resuming `dest` + ".incomplete" with a Range request, checks the
  // entry's checksum and renames it into place. Returns the X-Repo-Commit header (may be empty).
  util::Result<std::string> download(const RepoId& repo, const std::string& rev,
                                     const TreeEntry& entry, const std::filesystem::path& dest);

  // One API call with authentication, retries and the error messages; `make` builds each attempt.
  // A reply with status `also_ok` (e.g. 409 for "exists already") counts as success.
  util::Result<HttpResponse> call(const std::function<HttpRequest()>& make, std::string_view what,
                                  bool authenticated = true, long also_ok = 0);

  std::string api_url(const RepoId& repo, std::string_view action, const std::string& rev) const;
  std::string repo_url(const RepoId& repo) const;  // {endpoint}/{datasets/}ORG/NAME

 private:
  util::Error http_error(const HttpResponse& res, std::string_view what, int attempts) const;
  Settings settings_;
};

}  // namespace ok::hub
