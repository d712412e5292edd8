// `openkernel hub push|pull`: share traces, kernels, skills and results through the Hugging Face
// Hub, and fetch models (docs/hub.md). Exit codes: 0; 2 bad usage or input (a missing --from, a
// malformed repository name, no store); 3 the Hub or the network refused or failed (401, 403,
// 404, and 429, 5xx or network failures after the retries); 1 internal error; 130 interrupted.
#include <fmt/core.h>

#include "cli/command.hpp"
#include "cli/context.hpp"
#include "hub/cards.hpp"
#include "hub/sync.hpp"
#include "skills/library.hpp"
#include "util/paths.hpp"

namespace ok::cli {

namespace {

namespace fs = std::filesystem;
using util::ErrorKind;

struct HubOptions {
  std::string what;  // traces, kernels, skills, results, model
  std::string repo, revision = "main", from, out, message, cache_dir;
  std::vector<std::string> problems, files;
  bool is_private = false;
  int retries = 5;
};

int hub_error(const util::Error& e) {
  fmt::print(stderr, "openkernel: error: {}\n", e.message);
  switch (e.kind) {
    case ErrorKind::kAuth:
    case ErrorKind::kNetwork:
    case ErrorKind::kRateLimited:
    case ErrorKind::kServer:
    case ErrorKind::kProtocol:
    case ErrorKind::kTimeout:
      return 3;
    case ErrorKind::kCancelled:
      return 130;
    default:
      return util::exit_code(e);
  }
}

util::Result<hub::Client> make_client(const HubOptions& o) {
  auto settings = hub::settings_from_environment();
  if (!settings) return std::unexpected(settings.error());
  settings->retries = o.retries;
  return hub::Client(std::move(*settings));
}

hub::RepoType repo_type(const std::string& what) {
  return what == "kernels" || what == "model" ? hub::RepoType::kModel : hub::RepoType::kDataset;
}

// The files of a push and the commit's summary.
util::Result<std::vector<hub::CommitFile>> push_contents(const GlobalOptions& g,
                                                         const HubOptions& o) {
  std::vector<hub::CommitFile> files;
  if (o.what == "traces") {
    auto found = hub::folder_files(o.from, "");
    if (!found) return std::unexpected(found.error());
    std::erase_if(*found, [](const auto& f) { return f.path == "README.md"; });
    std::vector<std::string> paths;
    for (const auto& f : *found) paths.push_back(f.path);
    files = std::move(*found);
    files.push_back(hub::text_file(
        "README.md", hub::dataset_card(
                         o.repo,
                         "Optimisation traces recorded by OpenKernel (`openkernel traces export`): "
                         "every attempt's prompt, kernel, verdict and timings, and the training "
                         "tables derived from them (docs/traces.md in the OpenKernel repository).",
                         paths)));
  } else if (o.what == "results") {
    std::vector<std::string> paths;
    for (const auto& f : o.files) {
      std::error_code ec;
      if (!fs::is_regular_file(f, ec))
        return util::fail(ErrorKind::kBadInput, fmt::format("{} is not a readable file", f));
      files.push_back(hub::file_from(f, fs::path(f).filename().string()));
      paths.push_back(files.back().path);
    }
    files.push_back(hub::text_file(
        "README.md",
        hub::dataset_card(o.repo,
                          "Benchmark results of OpenKernel runs (results TSVs: docs/tsv.md in the "
                          "OpenKernel repository; score and report JSON).",
                          paths)));
  } else if (o.what == "skills") {
    std::error_code ec;
    if (!fs::is_regular_file(o.from, ec))
      return util::fail(
          ErrorKind::kBadInput,
          fmt::format("{} is not a readable file (give the file `openkernel skills export` wrote)",
                      o.from));
    const std::string name = fs::path(o.from).filename().string();
    files.push_back(hub::file_from(o.from, name));
    files.push_back(hub::text_file(
        "README.md",
        fmt::format(
            "---\ntags:\n- openkernel\n- gpu-kernels\n---\n\n# {}\n\nAn OpenKernel skill library "
            "(`{}`, written by `openkernel skills export`). `openkernel hub pull skills --repo {}` "
            "downloads it and merges it into the store, as `openkernel skills import` does.\n",
            o.repo, name, o.repo)));
  } else {
    auto cfg = config::load_default();
    if (!cfg) return std::unexpected(cfg.error());
    std::vector<std::string> skipped;
    auto entries = hub::best_kernels(store_path(g, *cfg), o.problems, skipped);
    if (!entries) return std::unexpected(entries.error());
    for (const auto& s : skipped) fmt::print(stderr, "openkernel: note: skipped {}\n", s);
    if (entries->empty())
      return util::fail(ErrorKind::kBadInput,
                        "the store has no correct kernel to push" +
                            std::string(o.problems.empty() ? "" : " for the problems given"));
    files = hub::kernel_files(o.repo, *entries);
  }
  return files;
}

int run_push(const GlobalOptions& g, const HubOptions& o) {
  auto repo = hub::parse_repo(o.repo, repo_type(o.what));
  if (!repo) return hub_error(repo.error());
  if ((o.what == "traces" || o.what == "skills") && o.from.empty())
    return hub_error({ErrorKind::kUsage, fmt::format("hub push {} needs --from", o.what)});
  auto files = push_contents(g, o);
  if (!files) return hub_error(files.error());
  auto client = make_client(o);
  if (!client) return hub_error(client.error());
  if (client->settings().token.empty())
    return hub_error(
        {ErrorKind::kAuth, "pushing needs a token with write access: set HF_TOKEN or write it to " +
                               (hub::hf_home() / "token").string() + " (docs/hub.md)"});
  const std::string summary =
      o.message.empty() ? fmt::format("openkernel hub push {}", o.what) : o.message;
  auto pushed =
      hub::push_files(*client, *repo, o.revision, o.is_private, std::move(*files), summary);
  if (!pushed) return hub_error(pushed.error());
  fmt::print("pushed {} files ({} through LFS, {} uploaded) to {} ({}), commit {}\n", pushed->files,
             pushed->lfs_files, pushed->lfs_uploaded, pushed->url, o.revision, pushed->commit.oid);
  return 0;
}

void print_serve(const hub::ModelSnapshot& s, const std::string& name) {
  fmt::print("downloaded {} at {} into {} ({} files, {} fetched)\n", name, s.commit,
             s.snapshot.string(), s.files, s.downloaded);
  std::string gguf;
  for (const auto& e : fs::recursive_directory_iterator(s.snapshot))
    if (e.path().extension() == ".gguf" && gguf.empty()) gguf = e.path().string();
  fmt::print("serve it through an OpenAI-compatible server, then pass its --base-url:\n");
  fmt::print(
      "  vLLM:      vllm serve {} --served-model-name {} --port 8000\n"
      "             --model {} --base-url http://127.0.0.1:8000/v1\n",
      s.snapshot.string(), name, name);
  if (gguf.empty()) {
    fmt::print("  llama.cpp and Ollama need a GGUF file; this repository has none\n");
    return;
  }
  fmt::print(
      "  llama.cpp: llama-server -m {} --port 8080\n"
      "             --model {} --base-url http://127.0.0.1:8080/v1\n",
      gguf, name);
  fmt::print(
      "  Ollama:    printf 'FROM {}\\n' > Modelfile && ollama create {} -f Modelfile\n"
      "             --model {} --base-url http://127.0.0.1:11434/v1\n",
      gguf, fs::path(name).filename().string(), fs::path(name).filename().string());
}

// Each pulled skills file merged into the store (`--db`), as `openkernel skills import` does: a
// file is checked whole before anything is written, so a foreign or malformed one exits 2 and
// leaves the store unchanged; the files stay in --out either way.
int merge_skills(const GlobalOptions& g, const std::vector<fs::path>& files) {
  auto cfg = config::load_default();
  if (!cfg) return hub_error(cfg.error());
  auto st = open_store(g, *cfg);
  if (!st) return hub_error(st.error());
  for (const auto& p : files) {
    if (p.extension() != ".json") continue;
    auto text = util::read_file(p);
    if (!text) return hub_error(text.error());
    auto doc = nlohmann::json::parse(*text, nullptr, false);
    if (doc.is_discarded())
      return hub_error({ErrorKind::kBadInput, p.string() + " is not JSON: not merged"});
    auto r = skills::import_json(*st, doc);
    if (!r) return hub_error({r.error().kind, p.string() + ": " + r.error().message});
    fmt::print(stderr, "merged {} skills from {} into the store ({} new, {} evidence rows)\n",
               r->skills, p.string(), r->added, r->evidence);
  }
  return 0;
}

int run_pull(const GlobalOptions& g, const HubOptions& o) {
  const std::string name = o.what == "model" ? o.from : o.repo;
  auto repo = hub::parse_repo(name, repo_type(o.what));
  if (!repo) return hub_error(repo.error());
  if (o.what == "kernels" && o.problems.size() != 1)
    return hub_error({ErrorKind::kUsage, "hub pull kernels needs --problem NAME (one problem)"});
  auto client = make_client(o);
  if (!client) return hub_error(client.error());
  if (o.what == "model") {
    auto snap = hub::pull_model(*client, *repo, o.revision,
                                o.cache_dir.empty() ? hub::hub_cache() : fs::path(o.cache_dir));
    if (!snap) return hub_error(snap.error());
    print_serve(*snap, repo->name);
    return 0;
  }
  const std::string folder = o.what == "kernels" ? hub::problem_folder(o.problems[0]) : "";
  const fs::path out = o.out.empty() ? fs::path(".") : fs::path(o.out);
  auto written = hub::pull_folder(*client, *repo, o.revision, folder, out);
  if (!written) return hub_error(written.error());
  for (const auto& p : *written) fmt::print("{}\n", p.string());
  fmt::print(stderr, "pulled {} files from {} ({}) into {}\n", written->size(), repo->name,
             o.revision, out.string());
  if (o.what == "skills") return merge_skills(g, *written);
  return 0;
}

void add_common(CLI::App* cmd, HubOptions& o) {
  cmd->add_option("--revision", o.revision, "Branch, tag or commit (default main)");
  cmd->add_option("--retries", o.retries, "Retries for 429, 5xx and network failures (default 5)")
      ->check(CLI::Range(0, 20));
}

}  // namespace

void add_hub_command(CLI::App& app, GlobalOptions& g, Action& action) {
  auto o = std::make_shared<HubOptions>();
  CLI::App* hub =
      app.add_subcommand("hub", "Push to and pull from the Hugging Face Hub (docs/hub.md)");
  hub->require_subcommand(1);
  CLI::App* push = hub->add_subcommand("push", "Upload traces, kernels, skills or results");
  push->require_subcommand(1);
  const std::pair<const char*, const char*> pushes[] = {
      {"traces", "A folder written by `openkernel traces export` (--from DIR), as a dataset"},
      {"kernels", "The best kernel of each problem in the store, as a model repository"},
      {"skills", "A skill library file (--from FILE), as a dataset"},
      {"results", "Results TSV/JSON files given by path, as a dataset"}};
  for (const auto& [what, help] : pushes) {
    CLI::App* cmd = push->add_subcommand(what, help);
    cmd->add_option("--repo", o->repo, "ORG/NAME")->required();
    cmd->add_flag("--private", o->is_private, "Create the repository private");
    cmd->add_option("--message", o->message, "The commit's summary");
    add_common(cmd, *o);
    if (std::string(what) == "traces" || std::string(what) == "skills")
      cmd->add_option("--from", o->from, "What to upload");
    if (std::string(what) == "kernels") {
      cmd->add_option("--problem", o->problems, "Only these problems (names; repeatable)");
      cmd->add_option("--db", g.db, "Store database");
    }
    if (std::string(what) == "results")
      cmd->add_option("files", o->files, "Files to upload")->required();
    cmd->callback([&g, &action, o, w = std::string(what)] {
      o->what = w;
      action = [&g, o] { return run_push(g, *o); };
    });
  }
  CLI::App* pull =
      hub->add_subcommand("pull", "Download traces, kernels, skills, results or a model");
  pull->require_subcommand(1);
  for (const char* what : {"traces", "kernels", "skills", "results", "model"}) {
    CLI::App* cmd = pull->add_subcommand(what, fmt::format("Download {}", what));
    add_common(cmd, *o);
    if (std::string(what) == "model") {
      cmd->add_option("name", o->from, "ORG/NAME")->required();
      cmd->add_option("--cache-dir", o->cache_dir,
                      "Cache folder (default $HF_HUB_CACHE or $HF_HOME/hub)");
    } else {
      cmd->add_option("--repo", o->repo, "ORG/NAME")->required();
      cmd->add_option("--out", o->out, "Folder to write into (default .)");
    }
    if (std::string(what) == "kernels")
      cmd->add_option("--problem", o->problems, "The problem's name")->required();
    if (std::string(what) == "skills")
      cmd->add_option("--db", g.db, "Store database to merge the skills into");
    cmd->callback([&g, &action, o, w = std::string(what)] {
      o->what = w;
      action = [&g, o] { return run_pull(g, *o); };
    });
  }
}

}  // namespace ok::cli
