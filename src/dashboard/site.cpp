#include "dashboard/site.hpp"

#include <fmt/core.h>

#include "util/paths.hpp"

namespace ok::dashboard {

namespace fs = std::filesystem;

const std::vector<VendorFile>& vendor_files() {
  static const std::vector<VendorFile> files = {
      // Plotly's cartesian bundle (with box plots and heatmaps), loaded when the Charts page is
      // first opened; the dashboard's own panels are SVG charts of our own.
      {"/vendor/plotly-cartesian.min.js", "plotly.js-cartesian-dist-min/plotly-cartesian.min.js"},
      {"/vendor/highlight.min.js", "@highlightjs/cdn-assets/es/highlight.min.js"},
      {"/vendor/highlight-github.min.css", "@highlightjs/cdn-assets/styles/github.min.css"},
  };
  return files;
}

std::string etag_of(const std::string& body) {
  return fmt::format("\"{:016x}-{}\"", std::hash<std::string>{}(body), body.size());
}

namespace {

bool is_page(const std::string& url) {
  return url == "/" || url.ends_with(".html");
}

// Every quoted "URL" of a file in `html` replaced by "PREFIX/URL".
void version_links(std::string& html, const std::map<std::string, SiteFile, std::less<>>& files,
                   const std::string& prefix) {
  for (const auto& [url, _] : files) {
    if (is_page(url)) continue;
    std::string from = "\"" + url + "\"", to = "\"" + prefix + url + "\"";
    for (size_t at = html.find(from); at != std::string::npos; at = html.find(from, at + to.size()))
      html.replace(at, from.size(), to);
  }
}

}  // namespace

Site::Site(const std::map<std::string, SiteFile>& files) : files_(files.begin(), files.end()) {
  std::string tags;
  for (auto& [url, f] : files_) {
    f.etag = etag_of(f.body);
    if (!is_page(url)) tags += url + f.etag;
  }
  prefix_ = fmt::format("/static/{:016x}", std::hash<std::string>{}(tags));
  for (auto& [url, f] : files_) {
    if (!is_page(url)) continue;
    version_links(f.body, files_, prefix_);
    f.etag = etag_of(f.body);
  }
}

std::string content_type_for(const fs::path& name) {
  static const std::map<std::string, std::string> types = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".txt", "text/plain; charset=utf-8"}};
  auto it = types.find(name.extension().string());
  return it == types.end() ? "application/octet-stream" : it->second;
}

util::Result<Site> Site::load(const fs::path& web_root, const fs::path& node_modules) {
  std::error_code ec;
  if (!fs::is_regular_file(web_root / "index.html", ec))
    return util::fail(
        util::ErrorKind::kEnvironment,
        fmt::format("the dashboard's page is missing: no {}", (web_root / "index.html").string()));
  std::map<std::string, SiteFile> files;
  for (auto it = fs::recursive_directory_iterator(web_root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    auto body = util::read_file(it->path());
    if (!body) return std::unexpected(body.error());
    std::string url = "/" + fs::relative(it->path(), web_root).generic_string();
    files[url] = {content_type_for(it->path()), std::move(*body), ""};
  }
  if (ec)
    return util::fail(util::ErrorKind::kEnvironment,
                      fmt::format("cannot list {}: {}", web_root.string(), ec.message()));
  for (const auto& v : vendor_files()) {
    fs::path p = node_modules / v.package_path;
    auto body = util::read_file(p);
    if (!body)
      return util::fail(util::ErrorKind::kEnvironment,
                        fmt::format("the dashboard's npm packages are missing ({} cannot be read): "
                                    "run scripts/setup.sh, which installs them with npm ci",
                                    p.string()));
    files[v.url] = {content_type_for(p), std::move(*body), ""};
  }
  files["/"] = files["/index.html"];
  return Site(std::move(files));
}

bool Site::immutable(std::string_view url_path) const {
  return url_path.size() > prefix_.size() + 1 && url_path.starts_with(prefix_) &&
         url_path[prefix_.size()] == '/';
}

const SiteFile* Site::find(std::string_view url_path) const {
  if (immutable(url_path)) {
    url_path.remove_prefix(prefix_.size());
    if (is_page(std::string(url_path))) return nullptr;  // the page itself is never versioned
  }
  auto it = files_.find(url_path);
  return it == files_.end() ? nullptr : &it->second;
}

}  // namespace ok::dashboard
