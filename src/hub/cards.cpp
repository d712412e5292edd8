#include "hub/cards.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "hub/sync.hpp"
#include "store/store.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"

namespace ok::hub {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kTables[] = {".parquet", ".jsonl", ".json", ".csv", ".tsv"};

bool is_table(const std::string& path) {
  return std::any_of(std::begin(kTables), std::end(kTables),
                     [&](const char* ext) { return path.ends_with(ext); });
}

std::string stem(const std::string& name) {
  return fs::path(name).stem().string();
}

std::string speed(const std::optional<double>& v) {
  return v ? fmt::format("{:.2f}x", *v) : "-";
}

}  // namespace

std::vector<DataConfig> data_configs(const std::vector<std::string>& paths) {
  std::map<std::string, std::vector<std::string>> by_name;
  for (const auto& p : paths) {
    if (!is_table(p) || p.starts_with("metadata/")) continue;
    const auto parts = util::split(p, '/');
    const std::string ext = fs::path(p).extension().string();
    std::string name, pattern = p;
    if (parts.size() == 1) {
      name = stem(p);
    } else if (parts[0] == "processed") {
      name = stem(parts[1]);
      if (parts.size() > 2) pattern = "processed/" + parts[1] + "/**/*" + ext;
    } else {
      name = parts[0];
      pattern = parts[0] + "/**/*" + ext;
    }
    auto& list = by_name[name];
    if (std::find(list.begin(), list.end(), pattern) == list.end()) list.push_back(pattern);
  }
  std::vector<DataConfig> out;
  for (auto& [name, list] : by_name) out.push_back({name, list});
  return out;
}

std::string dataset_card(const std::string& title, const std::string& description,
                         const std::vector<std::string>& paths) {
  const auto configs = data_configs(paths);
  std::string yaml = "---\nconfigs:\n";
  const bool has_pairs = std::any_of(configs.begin(), configs.end(),
                                     [](const auto& c) { return c.name == "training_pairs_v1"; });
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& c = configs[i];
    yaml += fmt::format("- config_name: {}\n", c.name);
    if ((has_pairs && c.name == "training_pairs_v1") || (!has_pairs && i == 0))
      yaml += "  default: true\n";
    yaml += "  data_files:\n  - split: train\n    path:\n";
    for (const auto& p : c.paths) yaml += fmt::format("    - \"{}\"\n", p);
  }
  yaml += "tags:\n- openkernel\n- gpu-kernels\n---\n\n";
  std::string body =
      fmt::format("# {}\n\n{}\n\n| config | files |\n| --- | --- |\n", title, description);
  for (const auto& c : configs)
    body += fmt::format("| `{}` | `{}` |\n", c.name, util::join(c.paths, "`, `"));
  body +=
      "\nLoad a config with `datasets.load_dataset(REPO, CONFIG)`. Written by `openkernel hub "
      "push`.\n";
  return yaml + body;
}

std::string problem_folder(const std::string& problem) {
  std::string out = problem;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return out.empty() ? "_" : out;
}

namespace {

std::optional<double> number(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? std::optional<double>(j[key].get<double>())
                                               : std::nullopt;
}

// The entry of a session from its report.json; nullopt (with the reason) when unusable.
std::optional<KernelEntry> entry_of(const store::SessionSummary& s, std::string& why) {
  const fs::path report = fs::path(s.out_dir) / "report.json";
  auto text = util::read_file(report);
  const auto j = text ? json::parse(*text, nullptr, false) : json();
  if (!j.is_object()) {
    why = fmt::format("{} (session {}): no readable {}", s.problem, s.id, report.string());
    return std::nullopt;
  }
  KernelEntry e;
  e.problem = s.problem;
  e.folder = problem_folder(s.problem);
  e.session = s.id;
  e.backend = s.backend;
  e.model = s.model;
  e.hardware = j.value("device", json()).is_string() ? j["device"].get<std::string>() : "cpu";
  e.speedup = number(j, "speedup");
  e.speedup_compile = number(j, "speedup_compile");
  if (j.contains("problem") && j["problem"].is_object()) {
    if (auto v = number(j["problem"], "level")) e.level = static_cast<int>(*v);
    if (auto v = number(j["problem"], "problem")) e.number = static_cast<int>(*v);
  }
  e.kernel =
      j.value("best_candidate", json()).is_string() ? j["best_candidate"].get<std::string>() : "";
  e.report_json = report;
  e.report_md = fs::path(s.out_dir) / "report.md";
  std::error_code ec;
  if (e.kernel.empty() || !fs::is_regular_file(e.kernel, ec)) {
    why = fmt::format("{} (session {}): its best kernel file {} is gone", s.problem, s.id,
                      e.kernel.empty() ? "(none)" : e.kernel.string());
    return std::nullopt;
  }
  return e;
}

}  // namespace

util::Result<std::vector<KernelEntry>> best_kernels(const fs::path& db,
                                                    const std::vector<std::string>& problems,
                                                    std::vector<std::string>& skipped) {
  std::error_code ec;
  if (!fs::exists(db, ec))
    return util::fail(util::ErrorKind::kBadInput, fmt::format("no store at {}", db.string()));
  auto store = store::Store::open(db);
  if (!store) return std::unexpected(store.error());
  auto sessions = store->sessions();
  if (!sessions) return std::unexpected(sessions.error());
  std::map<std::string, std::vector<store::SessionSummary>> by_problem;
  for (const auto& s : *sessions) {
    if (!s.best_speedup) continue;
    if (!problems.empty() &&
        std::find(problems.begin(), problems.end(), s.problem) == problems.end())
      continue;
    by_problem[s.problem].push_back(s);
  }
  std::vector<KernelEntry> out;
  for (auto& [problem, list] : by_problem) {
    std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return *a.best_speedup > *b.best_speedup;
    });
    for (const auto& s : list) {  // the fastest session whose files are still there
      std::string why;
      if (auto e = entry_of(s, why)) {
        out.push_back(std::move(*e));
        break;
      }
      skipped.push_back(why);
    }
  }
  return out;
}

std::vector<CommitFile> kernel_files(const std::string& repo,
                                     const std::vector<KernelEntry>& entries) {
  std::vector<CommitFile> files;
  std::string table =
      "| problem | level | speedup vs eager | vs torch.compile | hardware | backend | model | "
      "session |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& e : entries) {
    files.push_back(file_from(e.kernel, e.folder + "/" + e.kernel.filename().string()));
    files.push_back(file_from(e.report_json, e.folder + "/report.json"));
    std::error_code ec;
    if (fs::is_regular_file(e.report_md, ec))
      files.push_back(file_from(e.report_md, e.folder + "/report.md"));
    table += fmt::format("| [{}]({}/) | {} | {} | {} | {} | {} | {} | {} |\n", e.problem, e.folder,
                         e.level ? std::to_string(*e.level) : "-", speed(e.speedup),
                         speed(e.speedup_compile), e.hardware, e.backend, e.model, e.session);
  }
  files.push_back(text_file(
      "README.md",
      fmt::format("---\ntags:\n- openkernel\n- gpu-kernels\n- kernelbench\n---\n\n# {}\n\nThe best "
                  "verified kernel of each problem found by OpenKernel: one folder per problem "
                  "with the kernel (a KernelBench-format file defining `ModelNew`), the session's "
                  "report.json and report.md. Speedups are medians against the PyTorch reference "
                  "on the hardware named.\n\n{}\nFetch one with `openkernel hub pull kernels "
                  "--repo {} --problem NAME`.\n",
                  repo, table, repo)));
  return files;
}

}  // namespace ok::hub
