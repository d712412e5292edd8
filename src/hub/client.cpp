#include "hub/client.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "util/cancel.hpp"
#include "util/digest.hpp"
#include "util/paths.hpp"

namespace ok::hub {

using json = nlohmann::json;
using util::ErrorKind;

namespace {

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

bool valid_part(std::string_view part) {
  if (part.empty() || part.size() > 96 || part.find("..") != std::string_view::npos) return false;
  if (part.front() == '-' || part.front() == '.' || part.back() == '-' || part.back() == '.')
    return false;
  return std::all_of(part.begin(), part.end(), name_char);
}

// The server's own words, from a JSON {"error": ...} body or plain text; at most 300 characters.
std::string server_message(const HttpResponse& res) {
  std::string text;
  const auto parsed = json::parse(res.body, nullptr, false);
  if (parsed.is_object()) {
    for (const char* key : {"error", "message"})
      if (parsed.contains(key) && parsed[key].is_string()) text = parsed[key].get<std::string>();
  } else {
    text = res.body;
  }
  std::replace(text.begin(), text.end(), '\n', ' ');
  if (text.size() > 300) text = text.substr(0, 300) + "...";
  return text.empty() ? "" : ": " + text;
}

bool retryable(const HttpResponse& res) {
  return !res.transport_ok || res.status == 408 || res.status == 429 || res.status >= 500;
}

// Waits before attempt `attempt` + 1: the server's Retry-After (seconds) if any, else
// 1, 2, 4 ... s capped at 30; returns false when Ctrl-C came meanwhile.
bool backoff(const HttpResponse& res, int attempt) {
  double seconds = std::min(30.0, static_cast<double>(1 << std::min(attempt, 5)));
  if (auto it = res.headers.find("retry-after"); it != res.headers.end()) {
    try {
      seconds = std::clamp(std::stod(it->second), 0.0, 60.0);
    } catch (const std::exception&) {
    }
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (util::cancel_flag().load()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return !util::cancel_flag().load();
}

}  // namespace

util::Result<RepoId> parse_repo(std::string_view name, RepoType type) {
  const auto slash = name.find('/');
  if (slash == std::string_view::npos || !valid_part(name.substr(0, slash)) ||
      !valid_part(name.substr(slash + 1)))
    return util::fail(ErrorKind::kUsage,
                      fmt::format("'{}' is not a repository name: give ORG/NAME (letters, digits, "
                                  "'-', '_', '.'), e.g. my-org/kernels",
                                  name));
  return RepoId{type, std::string(name)};
}

std::string type_word(RepoType type) {
  return type == RepoType::kModel ? "model" : "dataset";
}

std::string Client::api_url(const RepoId& repo, std::string_view action,
                            const std::string& rev) const {
  return fmt::format("{}/api/{}s/{}/{}/{}", settings_.endpoint, type_word(repo.type), repo.name,
                     action, url_encode(rev, false));
}

std::string Client::repo_url(const RepoId& repo) const {
  return fmt::format("{}/{}{}", settings_.endpoint,
                     repo.type == RepoType::kDataset ? "datasets/" : "", repo.name);
}

util::Error Client::http_error(const HttpResponse& res, std::string_view what, int attempts) const {
  const std::string said = server_message(res);
  if (!res.transport_ok)
    return {ErrorKind::kNetwork, fmt::format("{} failed after {} attempts: {} ({})", what, attempts,
                                             res.transport_message, settings_.endpoint)};
  switch (res.status) {
    case 401:
      return {ErrorKind::kAuth,
              settings_.token.empty()
                  ? fmt::format("{}: the Hub answered 401 Unauthorized{}; no token is set: set "
                                "HF_TOKEN or write one to {} (docs/hub.md)",
                                what, said, (hf_home() / "token").string())
                  : fmt::format("{}: the Hub refused the token from {} (401 Unauthorized{}); it "
                                "is invalid, expired or revoked: make a new one",
                                what, settings_.token_source, said)};
    case 403:
      return {ErrorKind::kAuth,
              fmt::format("{}: forbidden (403{}); the token from {} lacks the right: it needs "
                          "write access to the repository's namespace",
                          what, said,
                          settings_.token_source.empty() ? "nowhere" : settings_.token_source)};
    case 404:
      return {ErrorKind::kNetwork,
              fmt::format("{}: not found (404{}); check the repository name and --revision (a "
                          "private repository also answers 404 without a token that may read it)",
                          what, said)};
    case 429:
      return {ErrorKind::kRateLimited,
              fmt::format("{}: the Hub kept answering 429 Too Many Requests after {} attempts{}; "
                          "wait and run the command again",
                          what, attempts, said)};
    default:
      break;
  }
  if (res.status >= 500)
    return {ErrorKind::kServer,
            fmt::format("{}: the Hub kept failing (HTTP {}) after {} attempts{}", what, res.status,
                        attempts, said)};
  return {ErrorKind::kProtocol, fmt::format("{}: unexpected HTTP {}{}", what, res.status, said)};
}

util::Result<HttpResponse> Client::call(const std::function<HttpRequest()>& make,
                                        std::string_view what, bool authenticated, long also_ok) {
  for (int attempt = 0;; ++attempt) {
    HttpRequest req = make();
    if (authenticated && !settings_.token.empty())
      req.headers.push_back("Authorization: Bearer " + settings_.token);
    HttpResponse res = http_send(req);
    if (res.cancelled || util::cancel_flag().load())
      return util::fail(ErrorKind::kCancelled, fmt::format("{}: interrupted", what));
    if (res.transport_ok && ((res.status >= 200 && res.status < 400) || res.status == also_ok))
      return res;
    if (!retryable(res) || attempt >= settings_.retries)
      return std::unexpected(http_error(res, what, attempt + 1));
    if (!backoff(res, attempt))
      return util::fail(ErrorKind::kCancelled, fmt::format("{}: interrupted", what));
  }
}

util::Result<void> Client::create_repo(const RepoId& repo, bool is_private) {
  const auto slash = repo.name.find('/');
  const json body = {{"name", repo.name.substr(slash + 1)},
                     {"organization", repo.name.substr(0, slash)},
                     {"type", type_word(repo.type)},
                     {"private", is_private}};
  auto res = call(
      [&] {
        return HttpRequest{"POST",
                           settings_.endpoint + "/api/repos/create",
                           {"Content-Type: application/json"},
                           body.dump()};
      },
      fmt::format("creating the {} repository {}", type_word(repo.type), repo.name), true, 409);
  if (!res) return std::unexpected(res.error());
  return {};
}

util::Result<void> Client::create_branch(const RepoId& repo, const std::string& branch) {
  const std::string url = api_url(repo, "branch", branch);
  auto res = call(
      [&] {
        return HttpRequest{"POST", url, {"Content-Type: application/json"}, "{}"};
      },
      fmt::format("creating branch {} of {}", branch, repo.name), true, 409);
  if (!res) return std::unexpected(res.error());
  return {};
}

util::Result<void> Client::preupload(const RepoId& repo, const std::string& rev,
                                     std::vector<CommitFile>& files, uint64_t lfs_bytes) {
  for (size_t start = 0; start < files.size(); start += 100) {
    json list = json::array();
    for (size_t i = start; i < std::min(files.size(), start + 100); ++i) {
      std::string sample = files[i].content.substr(0, 512);
      if (!files[i].source.empty()) {
        std::ifstream in(files[i].source, std::ios::binary);
        sample.assign(512, '\0');
        in.read(sample.data(), 512);
        sample.resize(static_cast<size_t>(in.gcount()));
      }
      list.push_back({{"path", files[i].path},
                      {"size", files[i].size},
                      {"sample", util::base64_encode(sample)}});
    }
    const std::string body = json{{"files", list}}.dump();
    const std::string url = api_url(repo, "preupload", rev);
    auto res = call(
        [&] {
          return HttpRequest{"POST", url, {"Content-Type: application/json"}, body};
        },
        fmt::format("preupload to {}", repo.name));
    if (!res) return std::unexpected(res.error());
    const auto answer = json::parse(res->body, nullptr, false);
    if (!answer.is_object() || !answer.contains("files") || !answer["files"].is_array())
      return util::fail(ErrorKind::kProtocol,
                        "the Hub's preupload answer is not {\"files\": [...]}");
    for (const auto& f : answer["files"]) {
      const auto path = f.value("path", std::string());
      for (auto& file : files)
        if (file.path == path && f.value("uploadMode", std::string()) == "lfs") file.lfs = true;
    }
  }
  for (auto& file : files)
    if (file.size > lfs_bytes) file.lfs = true;
  return {};
}

util::Result<CommitInfo> Client::commit(const RepoId& repo, const std::string& rev,
                                        const std::string& summary,
                                        const std::vector<CommitFile>& files) {
  std::string body =
      json{{"key", "header"}, {"value", {{"summary", summary}, {"description", ""}}}}.dump();
  for (const auto& f : files) {
    json line;
    if (f.lfs) {
      line = {
          {"key", "lfsFile"},
          {"value", {{"path", f.path}, {"algo", "sha256"}, {"oid", f.sha256}, {"size", f.size}}}};
    } else {
      std::string content = f.content;
      if (!f.source.empty()) {
        auto text = util::read_file(f.source);
        if (!text) return std::unexpected(text.error());
        content = std::move(*text);
      }
      line = {
          {"key", "file"},
          {"value",
           {{"path", f.path}, {"encoding", "base64"}, {"content", util::base64_encode(content)}}}};
    }
    body += "\n" + line.dump();
  }
  const std::string url = api_url(repo, "commit", rev);
  auto res = call(
      [&] {
        return HttpRequest{"POST", url, {"Content-Type: application/x-ndjson"}, body};
      },
      fmt::format("committing {} files to {}", files.size(), repo.name));
  if (!res) return std::unexpected(res.error());
  const auto answer = json::parse(res->body, nullptr, false);
  if (!answer.is_object() || !answer.contains("commitOid"))
    return util::fail(ErrorKind::kProtocol, "the Hub's commit answer has no commitOid");
  return CommitInfo{answer.value("commitOid", std::string()),
                    answer.value("commitUrl", std::string())};
}

util::Result<std::string> Client::revision_sha(const RepoId& repo, const std::string& rev) {
  const std::string url = api_url(repo, "revision", rev);
  auto res = call(
      [&] {
        return HttpRequest{"GET", url};
      },
      fmt::format("looking up revision {} of {}", rev, repo.name));
  if (!res) return std::unexpected(res.error());
  const auto answer = json::parse(res->body, nullptr, false);
  if (!answer.is_object() || !answer.contains("sha") || !answer["sha"].is_string())
    return util::fail(ErrorKind::kProtocol, "the Hub's revision answer has no sha");
  return answer["sha"].get<std::string>();
}

util::Result<std::vector<TreeEntry>> Client::list_tree(const RepoId& repo, const std::string& rev,
                                                       const std::string& path) {
  std::string url = api_url(repo, "tree", rev) +
                    (path.empty() ? "" : "/" + url_encode(path, true)) +
                    "?recursive=true&expand=false";
  std::vector<TreeEntry> out;
  while (!url.empty()) {
    auto res = call(
        [&] {
          return HttpRequest{"GET", url, {"Accept: application/json"}};
        },
        fmt::format("listing {}{} at {}", repo.name, path.empty() ? "" : "/" + path, rev));
    if (!res) return std::unexpected(res.error());
    const auto items = json::parse(res->body, nullptr, false);
    if (!items.is_array())
      return util::fail(ErrorKind::kProtocol, "the Hub's tree answer is not a list");
    for (const auto& item : items) {
      if (!item.is_object() || item.value("type", std::string()) != "file") continue;
      TreeEntry e{item.value("path", std::string()), item.value("oid", std::string()),
                  item.value("size", uint64_t{0}), std::nullopt};
      if (item.contains("lfs") && item["lfs"].is_object()) {
        e.lfs_sha256 = item["lfs"].value("oid", std::string());
        e.size = item["lfs"].value("size", e.size);
      }
      out.push_back(std::move(e));
    }
    url.clear();  // pages: Link: <URL>; rel="next"
    if (auto it = res->headers.find("link"); it != res->headers.end()) {
      const auto& link = it->second;
      const auto next = link.find("rel=\"next\"");
      const auto open = link.rfind('<', next), close = link.rfind('>', next);
      if (next != std::string::npos && open != std::string::npos && close > open)
        url = link.substr(open + 1, close - open - 1);
    }
  }
  return out;
}

}  // namespace ok::hub
