#include "hub/sync.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "util/paths.hpp"

namespace ok::hub {

namespace fs = std::filesystem;
using util::ErrorKind;

CommitFile file_from(const fs::path& source, const std::string& repo_path) {
  std::error_code ec;
  const auto size = fs::file_size(source, ec);
  return CommitFile{repo_path, source, "", ec ? 0 : static_cast<uint64_t>(size)};
}

CommitFile text_file(const std::string& repo_path, std::string content) {
  const uint64_t size = content.size();
  return CommitFile{repo_path, {}, std::move(content), size};
}

util::Result<std::vector<CommitFile>> folder_files(const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return util::fail(ErrorKind::kBadInput, fmt::format("{} is not a folder", dir.string()));
  std::vector<CommitFile> out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(".")) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    const std::string rel = fs::relative(it->path(), dir).generic_string();
    out.push_back(file_from(it->path(), prefix.empty() ? rel : prefix + "/" + rel));
  }
  if (ec)
    return util::fail(ErrorKind::kBadInput,
                      fmt::format("cannot read {}: {}", dir.string(), ec.message()));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return out;
}

util::Result<PushResult> push_files(Client& client, const RepoId& repo, const std::string& rev,
                                    bool is_private, std::vector<CommitFile> files,
                                    const std::string& summary) {
  if (auto ok = client.create_repo(repo, is_private); !ok) return std::unexpected(ok.error());
  if (rev != "main")
    if (auto ok = client.create_branch(repo, rev); !ok) return std::unexpected(ok.error());
  if (auto ok = client.preupload(repo, rev, files, kLfsBytes); !ok)
    return std::unexpected(ok.error());
  auto uploaded = client.upload_lfs(repo, rev, files);
  if (!uploaded) return std::unexpected(uploaded.error());
  auto commit = client.commit(repo, rev, summary, files);
  if (!commit) return std::unexpected(commit.error());
  PushResult r{*commit, static_cast<int>(files.size()), 0, *uploaded, client.repo_url(repo)};
  r.lfs_files =
      static_cast<int>(std::count_if(files.begin(), files.end(), [](auto& f) { return f.lfs; }));
  return r;
}

namespace {

// A repository path that stays inside the destination folder.
bool safe_path(const std::string& path) {
  if (path.empty() || path.starts_with('/')) return false;
  for (const auto& part : fs::path(path))
    if (part == ".." || part == ".") return false;
  return true;
}

}  // namespace

util::Result<std::vector<fs::path>> pull_folder(Client& client, const RepoId& repo,
                                                const std::string& rev, const std::string& path,
                                                const fs::path& out) {
  auto entries = client.list_tree(repo, rev, path);
  if (!entries) return std::unexpected(entries.error());
  if (entries->empty())
    return util::fail(ErrorKind::kNetwork, fmt::format("{} has no files{} at {}", repo.name,
                                                       path.empty() ? "" : " under " + path, rev));
  std::vector<fs::path> written;
  for (const auto& e : *entries) {
    if (!safe_path(e.path))
      return util::fail(ErrorKind::kProtocol,
                        fmt::format("the Hub listed an unsafe path '{}'", e.path));
    const fs::path dest = out / e.path;
    if (auto got = client.download(repo, rev, e, dest); !got) return std::unexpected(got.error());
    written.push_back(dest);
  }
  return written;
}

util::Result<ModelSnapshot> pull_model(Client& client, const RepoId& repo, const std::string& rev,
                                       const fs::path& cache) {
  ModelSnapshot snap;
  std::string folder = "models--" + repo.name;
  folder.replace(folder.find('/'), 1, "--");
  snap.repo_dir = cache / folder;
  auto commit = client.revision_sha(repo, rev);
  if (!commit) return std::unexpected(commit.error());
  snap.commit = *commit;
  snap.snapshot = snap.repo_dir / "snapshots" / snap.commit;
  auto entries = client.list_tree(repo, snap.commit, "");
  if (!entries) return std::unexpected(entries.error());
  std::error_code ec;
  for (const auto& e : *entries) {
    if (!safe_path(e.path))
      return util::fail(ErrorKind::kProtocol,
                        fmt::format("the Hub listed an unsafe path '{}'", e.path));
    const std::string etag = e.lfs_sha256 ? *e.lfs_sha256 : e.oid;
    const fs::path blob = snap.repo_dir / "blobs" / etag;
    if (!fs::exists(blob)) {
      if (auto got = client.download(repo, snap.commit, e, blob); !got)
        return std::unexpected(got.error());
      ++snap.downloaded;
    }
    const fs::path link = snap.snapshot / e.path;
    fs::create_directories(link.parent_path(), ec);
    fs::remove(link, ec);
    fs::create_symlink(fs::relative(blob, link.parent_path()), link, ec);
    if (ec)
      return util::fail(ErrorKind::kBadInput,
                        fmt::format("cannot link {}: {}", link.string(), ec.message()));
    ++snap.files;
  }
  if (rev != snap.commit)
    if (auto ok = util::write_file(snap.repo_dir / "refs" / rev, snap.commit); !ok)
      return std::unexpected(ok.error());
  return snap;
}

}  // namespace ok::hub
