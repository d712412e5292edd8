// The loopback Hub's repositories on disk (a test tool; docs/hub.md, "Testing").
//
// ROOT/<models|datasets>/<org>/<name>/ holds repo.json (private flag, branches -> commit id),
// commits/<id>.json (parent, summary, path -> {oid, size, lfs}), objects/<git blob sha1> (regular
// files) and lfs/<sha256> (LFS objects). Ids are real: git blob SHA-1 for regular files (and for
// an LFS file's pointer text), SHA-256 for LFS objects; a commit id is the SHA-1 of its record.
// Not thread-safe: the server serialises calls with one mutex.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ok::hubtest {

struct FileEntry {
  std::string oid;  // git blob id
  uint64_t size = 0;
  std::string lfs;  // sha256, empty for a regular file
};

using Tree = std::map<std::string, FileEntry>;

struct Repo {
  std::filesystem::path dir;
  bool is_private = false;
  nlohmann::json branches;  // name -> commit id
};

class RepoStore {
 public:
  explicit RepoStore(std::filesystem::path root) : root_(std::move(root)) {}
  std::filesystem::path dir(const std::string& type, const std::string& name) const;
  std::optional<Repo> find(const std::string& type, const std::string& name) const;
  // False when it exists already.
  bool create(const std::string& type, const std::string& name, bool is_private);
  bool create_branch(Repo& repo, const std::string& branch, const std::string& from);
  // The commit a revision names (a branch or a commit id), or nullopt.
  std::optional<std::string> resolve(const Repo& repo, const std::string& rev) const;
  Tree tree(const Repo& repo, const std::string& commit) const;
  std::string put_object(const Repo& repo, const std::string& content);  // returns its oid
  std::filesystem::path object_path(const Repo& repo, const FileEntry& e) const;
  std::filesystem::path lfs_path(const Repo& repo, const std::string& sha256) const;
  // Records a commit of `tree` on `branch`; returns its id.
  std::string commit(Repo& repo, const std::string& branch, const Tree& tree,
                     const std::string& summary);

 private:
  void save(const Repo& repo) const;
  std::filesystem::path root_;
};

}  // namespace ok::hubtest
