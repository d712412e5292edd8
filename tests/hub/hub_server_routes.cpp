// The loopback Hub's API routes: repositories, commits, LFS and reads (hub_server.hpp).
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "hub/oid.hpp"
#include "hub_server.hpp"
#include "util/digest.hpp"

namespace ok::hubtest {

using json = nlohmann::json;
namespace fs = std::filesystem;
using Req = httplib::Request;
using Res = httplib::Response;

namespace {

constexpr uint64_t kLfsAbove = 10 * 1024 * 1024;
const std::string kRepo = "(model|dataset)s/([^/]+/[^/]+)";

// The commit a revision names, or answers 404.
std::optional<std::string> revision(State& s, const Repo& repo, const std::string& rev, Res& res) {
  auto id = s.store.resolve(repo, rev);
  if (!id) reply_error(res, 404, fmt::format("Invalid rev id: {}", rev), "RevisionNotFound");
  return id;
}

std::string lfs_href(const Req& req, const State& s, const std::string& kind,
                     const std::string& type, const std::string& name, const std::string& oid) {
  const std::string what = type + "/" + name + "/" + oid;
  return fmt::format("{}/_lfs/{}{}?sig={}", base_url(req), what, kind == "verify" ? "/verify" : "",
                     sign(s, kind + ":" + what));
}

bool signed_ok(const State& s, const Req& req, const std::string& kind, Res& res) {
  const std::string what =
      req.matches[1].str() + "/" + req.matches[2].str() + "/" + req.matches[3].str();
  if (req.get_param_value("sig") == sign(s, kind + ":" + what)) return true;
  reply_error(res, 403, "bad signature");
  return false;
}

// Applies one NDJSON operation line to `tree`; an error message when it is malformed.
std::string apply_line(State& s, Repo& repo, const json& line, ok::hubtest::Tree& tree) {
  const std::string key = line.value("key", "");
  const json& v = line.contains("value") ? line["value"] : json::object();
  const std::string path = v.value("path", "");
  if (key == "header") return "";
  if (path.empty() || path.starts_with("/") || path.find("..") != std::string::npos)
    return "bad path '" + path + "'";
  if (key == "file") {
    auto content = util::base64_decode(v.value("content", ""));
    if (!content) return "content of " + path + " is not base64";
    tree[path] = FileEntry{s.store.put_object(repo, *content), content->size(), ""};
  } else if (key == "lfsFile") {
    const std::string oid = v.value("oid", "");
    const uint64_t size = v.value("size", uint64_t{0});
    std::error_code ec;
    if (fs::file_size(s.store.lfs_path(repo, oid), ec) != size || ec)
      return "LFS object " + oid + " of " + path + " was not uploaded";
    tree[path] = FileEntry{hub::git_blob_sha1(hub::lfs_pointer(oid, size)), size, oid};
  } else if (key == "deletedFile") {
    tree.erase(path);
  } else if (key == "deletedFolder") {
    std::erase_if(tree, [&](const auto& kv) { return kv.first.starts_with(path + "/"); });
  } else {
    return "unknown key '" + key + "'";
  }
  return "";
}

void commit(State& s, const Req& req, Res& res) {
  std::lock_guard lock(s.mutex);
  if (!may_write(s, req, res)) return;
  auto repo = readable(s, req, res, req.matches[1], req.matches[2]);
  if (!repo) return;
  const std::string branch = req.matches[3];
  auto head = revision(s, *repo, branch, res);
  if (!head) return;
  auto tree = s.store.tree(*repo, *head);
  std::string summary = "upload", line_text;
  std::istringstream lines(req.body);
  while (std::getline(lines, line_text)) {
    if (line_text.empty()) continue;
    const auto line = json::parse(line_text, nullptr, false);
    if (!line.is_object()) return reply_error(res, 400, "a line of the commit is not JSON");
    if (line.value("key", "") == "header") {
      summary = line["value"].value("summary", summary);
      const auto parent = line["value"].value("parentCommit", json());
      if (parent.is_string() && parent.get<std::string>() != *head)
        return reply_error(res, 412, "parentCommit is not the head of " + branch);
    }
    if (auto bad = apply_line(s, *repo, line, tree); !bad.empty())
      return reply_error(res, 400, bad);
  }
  const std::string id = s.store.commit(*repo, branch, tree, summary);
  res.set_content(
      json{{"success", true},
           {"commitOid", id},
           {"commitUrl", fmt::format("{}/{}/commit/{}", base_url(req), req.matches[2].str(), id)}}
          .dump(),
      "application/json");
}

void preupload(State& s, const Req& req, Res& res) {
  std::lock_guard lock(s.mutex);
  if (!may_write(s, req, res)) return;
  auto repo = readable(s, req, res, req.matches[1], req.matches[2]);
  if (!repo) return;
  const auto body = json::parse(req.body, nullptr, false);
  if (!body.is_object() || !body.contains("files")) return reply_error(res, 400, "no files");
  json files = json::array();
  for (const auto& f : body["files"]) {
    const auto sample = util::base64_decode(f.value("sample", "")).value_or("");
    const bool lfs =
        f.value("size", uint64_t{0}) > kLfsAbove || sample.find('\0') != std::string::npos;
    files.push_back({{"path", f.value("path", "")},
                     {"uploadMode", lfs ? "lfs" : "regular"},
                     {"shouldIgnore", false}});
  }
  res.set_content(json{{"files", files}}.dump(), "application/json");
}

}  // namespace

void add_repo_routes(httplib::Server& http, State& s) {
  http.Post("/api/repos/create", [&s](const Req& req, Res& res) {
    std::lock_guard lock(s.mutex);
    if (!may_write(s, req, res)) return;
    const auto body = json::parse(req.body, nullptr, false);
    const std::string type = body.is_object() ? body.value("type", "model") : "";
    if (type != "model" && type != "dataset")
      return reply_error(res, 400, "type must be model or dataset");
    const std::string name = body.value("organization", "") + "/" + body.value("name", "");
    const bool is_private =
        body.value("private", false) || body.value("visibility", "") == "private";
    const std::string url = base_url(req) + (type == "dataset" ? "/datasets/" : "/") + name;
    if (!s.store.create(type, name, is_private))
      return reply_error(res, 409, "You already created this " + type + " repo");
    res.set_content(json{{"url", url}, {"name", name}, {"id", name}}.dump(), "application/json");
  });
  http.Post("^/api/" + kRepo + "/preupload/([^/]+)$",
            [&s](const Req& req, Res& res) { preupload(s, req, res); });
  http.Post("^/api/" + kRepo + "/commit/([^/]+)$",
            [&s](const Req& req, Res& res) { commit(s, req, res); });
  http.Post("^/api/" + kRepo + "/branch/([^/]+)$", [&s](const Req& req, Res& res) {
    std::lock_guard lock(s.mutex);
    if (!may_write(s, req, res)) return;
    auto repo = readable(s, req, res, req.matches[1], req.matches[2]);
    if (!repo) return;
    if (!s.store.create_branch(*repo, req.matches[3], repo->branches["main"]))
      return reply_error(res, 409, "Reference already exists");
    res.set_content("{}", "application/json");
  });
}

void add_lfs_routes(httplib::Server& http, State& s) {
  http.Post(R"(^/(datasets/)?([^/]+/[^/]+)\.git/info/lfs/objects/batch$)", [&s](const Req& req,
                                                                                Res& res) {
    std::lock_guard lock(s.mutex);
    if (!may_write(s, req, res)) return;
    const std::string type = req.matches[1].length() ? "dataset" : "model";
    auto repo = readable(s, req, res, type, req.matches[2]);
    if (!repo) return;
    const auto body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || body.value("operation", "") != "upload" || !body.contains("objects"))
      return reply_error(res, 400, "only upload batches are served");
    json objects = json::array();
    for (const auto& o : body["objects"]) {
      const std::string oid = o.value("oid", "");
      const uint64_t size = o.value("size", uint64_t{0});
      json out = {{"oid", oid}, {"size", size}};
      std::error_code ec;
      if (oid.size() != 64) {
        out["error"] = {{"code", 422}, {"message", "oid is not a sha256"}};
      } else if (fs::file_size(s.store.lfs_path(*repo, oid), ec) != size || ec) {
        out["actions"] = {{"upload",
                           {{"href", lfs_href(req, s, "up", type, req.matches[2], oid)},
                            {"header", json::object()}}},
                          {"verify",
                           {{"href", lfs_href(req, s, "verify", type, req.matches[2], oid)},
                            {"header", json::object()}}}};
      }
      objects.push_back(out);
    }
    res.set_content(json{{"transfer", "basic"}, {"objects", objects}}.dump(),
                    "application/vnd.git-lfs+json");
  });
  const std::string object = "^/_lfs/(model|dataset)/([^/]+/[^/]+)/([0-9a-f]{64})";
  http.Put(object + "$", [&s](const Req& req, Res& res, const httplib::ContentReader& read) {
    if (!signed_ok(s, req, "up", res)) return;
    const fs::path dir = s.store.dir(req.matches[1], req.matches[2]) / "lfs";
    fs::create_directories(dir);
    const fs::path tmp =
        dir / (req.matches[3].str() + ".upload." + sign(s, std::to_string(std::rand())));
    {
      std::ofstream out(tmp, std::ios::binary);
      read([&](const char* data, size_t n) {
        return static_cast<bool>(out.write(data, static_cast<std::streamsize>(n)));
      });
    }
    if (util::sha256_file(tmp).value_or("") != req.matches[3].str()) {
      fs::remove(tmp);
      return reply_error(res, 400, "the content does not hash to the oid");
    }
    std::lock_guard lock(s.mutex);
    fs::rename(tmp, dir / req.matches[3].str());
    res.set_header("ETag", "\"" + req.matches[3].str() + "\"");
  });
  http.Post(object + "/verify$", [&s](const Req& req, Res& res) {
    if (!signed_ok(s, req, "verify", res)) return;
    const auto body = json::parse(req.body, nullptr, false);
    std::error_code ec;
    const auto size = fs::file_size(
        s.store.dir(req.matches[1], req.matches[2]) / "lfs" / req.matches[3].str(), ec);
    if (ec || !body.is_object() || body.value("size", uint64_t{0}) != size)
      return reply_error(res, 404, "object not found");
    res.set_content("{}", "application/vnd.git-lfs+json");
  });
  http.Get(object + "$", [&s](const Req& req, Res& res) {
    if (!signed_ok(s, req, "dl", res)) return;
    const fs::path p = s.store.dir(req.matches[1], req.matches[2]) / "lfs" / req.matches[3].str();
    if (!fs::exists(p)) return reply_error(res, 404, "object not found");
    res.set_header("ETag", "\"" + req.matches[3].str() + "\"");
    serve_file(res, p);
  });
}

namespace {

json tree_listing(const ok::hubtest::Tree& tree, const std::string& prefix, bool recursive) {
  json out = json::array();
  std::set<std::string> dirs;
  const std::string under = prefix.empty() ? "" : prefix + "/";
  for (const auto& [path, e] : tree) {
    if (!path.starts_with(under)) continue;
    const std::string rest = path.substr(under.size());
    const auto slash = rest.find('/');
    if (slash != std::string::npos) {
      for (size_t p = rest.find('/'); p != std::string::npos; p = rest.find('/', p + 1)) {
        if (!recursive && p != slash) break;
        dirs.insert(under + rest.substr(0, p));
      }
      if (!recursive) continue;
    }
    json entry = {{"type", "file"}, {"oid", e.oid}, {"size", e.size}, {"path", path}};
    if (!e.lfs.empty())
      entry["lfs"] = {{"oid", e.lfs},
                      {"size", e.size},
                      {"pointerSize", hub::lfs_pointer(e.lfs, e.size).size()}};
    out.push_back(entry);
  }
  for (const auto& d : dirs)
    out.push_back(
        {{"type", "directory"}, {"oid", hub::git_blob_sha1(d)}, {"size", 0}, {"path", d}});
  return out;
}

void resolve(State& s, const Req& req, Res& res) {
  std::lock_guard lock(s.mutex);
  const std::string type = req.matches[1].length() ? "dataset" : "model";
  auto repo = readable(s, req, res, type, req.matches[2]);
  if (!repo) return;
  auto id = revision(s, *repo, req.matches[3], res);
  if (!id) return;
  const auto tree = s.store.tree(*repo, *id);
  const auto it = tree.find(req.matches[4]);
  if (it == tree.end()) return reply_error(res, 404, "Entry not found", "EntryNotFound");
  const FileEntry& e = it->second;
  res.set_header("X-Repo-Commit", *id);
  if (e.lfs.empty()) {
    res.set_header("ETag", "\"" + e.oid + "\"");
    return serve_file(res, s.store.object_path(*repo, e));
  }
  res.status = 302;
  res.set_header("ETag", "\"" + e.lfs + "\"");
  res.set_header("X-Linked-Etag", "\"" + e.lfs + "\"");
  res.set_header("X-Linked-Size", std::to_string(e.size));
  res.set_header("Location", lfs_href(req, s, "dl", type, req.matches[2], e.lfs));
}

}  // namespace

void add_read_routes(httplib::Server& http, State& s) {
  http.Get("^/api/" + kRepo + "/tree/([^/]+)(/.*)?$", [&s](const Req& req, Res& res) {
    std::lock_guard lock(s.mutex);
    auto repo = readable(s, req, res, req.matches[1], req.matches[2]);
    if (!repo) return;
    auto id = revision(s, *repo, req.matches[3], res);
    if (!id) return;
    std::string prefix = req.matches[4].length() ? req.matches[4].str().substr(1) : "";
    while (prefix.ends_with('/')) prefix.pop_back();
    const json listing =
        tree_listing(s.store.tree(*repo, *id), prefix, req.get_param_value("recursive") == "true");
    if (listing.empty() && !prefix.empty())
      return reply_error(res, 404, "Entry not found", "EntryNotFound");
    res.set_content(listing.dump(), "application/json");
  });
  http.Get("^/api/" + kRepo + "/revision/([^/]+)$", [&s](const Req& req, Res& res) {
    std::lock_guard lock(s.mutex);
    auto repo = readable(s, req, res, req.matches[1], req.matches[2]);
    if (!repo) return;
    auto id = revision(s, *repo, req.matches[3], res);
    if (!id) return;
    json siblings = json::array();
    for (const auto& [path, e] : s.store.tree(*repo, *id))
      siblings.push_back({{"rfilename", path}});
    res.set_content(json{{"id", req.matches[2].str()},
                         {"sha", *id},
                         {"private", repo->is_private},
                         {"siblings", siblings}}
                        .dump(),
                    "application/json");
  });
  http.Get(R"(^/(datasets/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)$)",
           [&s](const Req& req, Res& res) { resolve(s, req, res); });
}

}  // namespace ok::hubtest
