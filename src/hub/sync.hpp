// Whole-repository operations on top of Client: push a set of files as one commit, pull a folder
// of a repository, and pull a model into the official tools' cache layout.
//
// push_files creates the repository (and a non-main branch) when missing, asks preupload which
// files go through LFS (also every file above kLfsBytes), uploads the LFS objects the Hub lacks
// (a re-run skips those already uploaded: that is how an interrupted push resumes) and commits
// everything in one commit. pull_folder and pull_model download each file to NAME.incomplete,
// resume it with a Range request, check its sha256 (LFS) or git blob id and only then rename it
// into place, so no partial file ever carries its final name.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hub/client.hpp"

namespace ok::hub {

inline constexpr uint64_t kLfsBytes = 10 * 1024 * 1024;

// The files of a local folder (recursively, sorted, hidden files skipped), under `prefix`.
util::Result<std::vector<CommitFile>> folder_files(const std::filesystem::path& dir,
                                                   const std::string& prefix);
CommitFile file_from(const std::filesystem::path& source, const std::string& repo_path);
CommitFile text_file(const std::string& repo_path, std::string content);

struct PushResult {
  CommitInfo commit;
  int files = 0, lfs_files = 0, lfs_uploaded = 0;
  std::string url;  // the repository's page
};

util::Result<PushResult> push_files(Client& client, const RepoId& repo, const std::string& rev,
                                    bool is_private, std::vector<CommitFile> files,
                                    const std::string& summary);

// Downloads every file under `path` (the whole repository when empty) into `out`, keeping paths
// relative to the repository root. Returns the files written.
util::Result<std::vector<std::filesystem::path>> pull_folder(Client& client, const RepoId& repo,
                                                             const std::string& rev,
                                                             const std::string& path,
                                                             const std::filesystem::path& out);

struct ModelSnapshot {
  std::filesystem::path repo_dir;  // CACHE/models--ORG--NAME
  std::filesystem::path snapshot;  // repo_dir/snapshots/<commit>
  std::string commit;
  int files = 0, downloaded = 0;
};

// CACHE/models--ORG--NAME/{blobs/<etag>, refs/<rev> (the commit id), snapshots/<commit>/<path>
// (a relative symlink to the blob)}: the layout huggingface_hub and the tools built on it read.
util::Result<ModelSnapshot> pull_model(Client& client, const RepoId& repo, const std::string& rev,
                                       const std::filesystem::path& cache);

}  // namespace ok::hub
