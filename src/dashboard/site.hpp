// The dashboard's static files: the page (web/: HTML, CSS, plain-JS ES modules) and the npm
// packages it uses (Plotly's cartesian bundle, highlight.js's prebuilt @highlightjs/cdn-assets),
// read into memory once when the dashboard starts. Requests are looked up in this list by exact URL
// path, so no request can name another file (path traversal has nothing to traverse). Nothing is
// fetched from the network: the npm packages come from node_modules, installed by scripts/setup.sh
// (`npm ci`, pinned by package-lock.json).
//
// Every file is also served under a versioned path, /static/VERSION/PATH, where VERSION is a hash
// of all the files but the page itself: index.html names its files by those paths, so a browser
// may keep them for good (Cache-Control immutable: no request on a reload, and V8 reuses its
// compiled code of Plotly's bundle), and a dashboard serving other files names other paths. The
// plain paths stay, revalidated by ETag.
//
// Immutable after load(); safe to read from any thread.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace ok::dashboard {

struct SiteFile {
  std::string content_type;
  std::string body;
  std::string etag;  // a quoted hash of the body: browsers revalidate (and keep compiled scripts)
};

// The ETag of a body.
std::string etag_of(const std::string& body);

// One npm file the page loads: served at `url` from node_modules/`package_path`.
struct VendorFile {
  std::string url;
  std::string package_path;
};

// The npm files the page loads (index.html names the same URLs).
const std::vector<VendorFile>& vendor_files();

class Site {
 public:
  // Every regular file under `web_root` (served at its path relative to it; index.html also at
  // "/") and the vendor files from `node_modules`. kEnvironment naming what is missing (the web
  // folder, or a package: run scripts/setup.sh) when a file cannot be read.
  static util::Result<Site> load(const std::filesystem::path& web_root,
                                 const std::filesystem::path& node_modules);
  // A site of the given files (load(), tests); their ETags are set here.
  explicit Site(const std::map<std::string, SiteFile>& files);

  // The file served at `url_path` (a plain or a versioned path), or nullptr.
  const SiteFile* find(std::string_view url_path) const;
  // True for a versioned path of this site's files (/static/VERSION/...), which never changes.
  bool immutable(std::string_view url_path) const;
  // "/static/VERSION": the prefix of the versioned paths.
  const std::string& prefix() const { return prefix_; }
  size_t size() const { return files_.size(); }

 private:
  std::map<std::string, SiteFile, std::less<>> files_;
  std::string prefix_;
};

// The Content-Type for a file name (by extension; application/octet-stream when unknown).
std::string content_type_for(const std::filesystem::path& name);

}  // namespace ok::dashboard
