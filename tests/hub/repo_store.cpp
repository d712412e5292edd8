#include "repo_store.hpp"

#include <fstream>
#include <sstream>

#include "hub/oid.hpp"

namespace ok::hubtest {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spill(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  const fs::path tmp = p.string() + ".tmp";
  std::ofstream(tmp, std::ios::binary) << text;
  fs::rename(tmp, p);
}

}  // namespace

fs::path RepoStore::dir(const std::string& type, const std::string& name) const {
  return root_ / (type + "s") / name;
}

std::optional<Repo> RepoStore::find(const std::string& type, const std::string& name) const {
  const fs::path d = dir(type, name);
  if (!fs::exists(d / "repo.json")) return std::nullopt;
  const auto meta = json::parse(slurp(d / "repo.json"));
  return Repo{d, meta.value("private", false), meta["branches"]};
}

void RepoStore::save(const Repo& repo) const {
  spill(repo.dir / "repo.json",
        json{{"private", repo.is_private}, {"branches", repo.branches}}.dump());
}

bool RepoStore::create(const std::string& type, const std::string& name, bool is_private) {
  if (find(type, name)) return false;
  Repo repo{dir(type, name), is_private, json::object()};
  commit(repo, "main", {}, "initial commit");
  return true;
}

bool RepoStore::create_branch(Repo& repo, const std::string& branch, const std::string& from) {
  if (repo.branches.contains(branch)) return false;
  repo.branches[branch] = from;
  save(repo);
  return true;
}

std::optional<std::string> RepoStore::resolve(const Repo& repo, const std::string& rev) const {
  if (repo.branches.contains(rev)) return repo.branches[rev].get<std::string>();
  if (rev.size() == 40 && fs::exists(repo.dir / "commits" / (rev + ".json"))) return rev;
  return std::nullopt;
}

Tree RepoStore::tree(const Repo& repo, const std::string& commit) const {
  Tree out;
  const auto record = json::parse(slurp(repo.dir / "commits" / (commit + ".json")));
  for (const auto& [path, e] : record["files"].items())
    out[path] = FileEntry{e["oid"], e["size"], e.value("lfs", std::string())};
  return out;
}

std::string RepoStore::put_object(const Repo& repo, const std::string& content) {
  const std::string oid = hub::git_blob_sha1(content);
  const fs::path p = repo.dir / "objects" / oid;
  if (!fs::exists(p)) spill(p, content);
  return oid;
}

fs::path RepoStore::object_path(const Repo& repo, const FileEntry& e) const {
  return e.lfs.empty() ? repo.dir / "objects" / e.oid : lfs_path(repo, e.lfs);
}

fs::path RepoStore::lfs_path(const Repo& repo, const std::string& sha256) const {
  return repo.dir / "lfs" / sha256;
}

std::string RepoStore::commit(Repo& repo, const std::string& branch, const Tree& tree,
                              const std::string& summary) {
  json files = json::object();
  for (const auto& [path, e] : tree)
    files[path] = json{{"oid", e.oid}, {"size", e.size}, {"lfs", e.lfs}};
  const std::string parent =
      repo.branches.contains(branch) ? repo.branches[branch].get<std::string>() : "";
  const json record = {{"parent", parent},
                       {"summary", summary},
                       {"files", files},
                       {"branch", branch},
                       {"n", repo.branches.size()}};
  const std::string text = record.dump();
  const std::string id = hub::git_blob_sha1(text + parent);
  spill(repo.dir / "commits" / (id + ".json"), text);
  repo.branches[branch] = id;
  save(repo);
  return id;
}

}  // namespace ok::hubtest
