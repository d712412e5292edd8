// What every front end does around run_session (the CLI's `optimize` today; the terminal UI and
// the Python API next), so that no front end holds these rules itself:
//   resume_session  a recorded session's options, with what a resume may change applied, and its
//                   attempts so far;
//   Agents          the generator and critic for the session's model: the builtin generator over
//                   the whole template space and the heuristic critic, or the LLM agents over an
//                   endpoint with their spending ledger (the budget less what the resumed attempts
//                   already spent) and their calls recorded in the store;
//   write_reports   report.json and report.md in the session's folder.
// Front ends keep the flags, the problem's resolution, the endpoint's resolution (the config's
// and the registry's business) and what they print.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "llm/accounting.hpp"
#include "llm/client.hpp"
#include "llm/recorder.hpp"
#include "llm/registry.hpp"
#include "optimize/agents.hpp"
#include "optimize/session.hpp"
#include "store/store.hpp"

namespace ok::optimize {

// A bound on the builtin template points a session considers (the largest space today: 320).
inline constexpr int kMaxTemplatePoints = 1024;

// What a resume may change; the rest of a session's options are the ones it was started with.
struct ResumeChanges {
  int iterations = 0;                // > 0: the search's new length (a resume may extend it)
  std::optional<double> budget_usd;  // a new spending limit
  std::string prebuild;              // non-empty: auto, on or off
  // Time budgets are per run: a resume gets the ones it is given and no others.
  std::optional<double> budget_wall_s, budget_device_s;
};

struct ResumedSession {
  Options options;
  std::vector<Attempt> attempts;
};

// kBadInput when the store has no session `id` or its options cannot be read.
util::Result<ResumedSession> resume_session(store::Store& store, const std::string& id,
                                            const ResumeChanges& changes);

// The money the attempts already spent on the model.
double spent_usd(const std::vector<Attempt>& attempts);

class Agents {
 public:
  using Warn = std::function<void(const std::string&)>;
  // `endpoint`: the session's model, absent for the builtin generator. The LLM's calls go to the
  // store at `db` (when it cannot be opened: `warn`, and the session runs unrecorded).
  static std::unique_ptr<Agents> make(const Options& o, const std::string& session,
                                      const std::optional<llm::Endpoint>& endpoint,
                                      const std::filesystem::path& db, double already_spent_usd,
                                      const Warn& warn);
  Generator* generator() const { return generator_.get(); }
  Critic* critic() const { return critic_.get(); }
  // The LLM's spending, for run_session; null for the builtin generator.
  llm::Ledger* ledger() { return client_ ? &ledger_ : nullptr; }

 private:
  explicit Agents(std::optional<double> budget) : ledger_(budget) {}
  llm::Ledger ledger_;  // the client keeps its address: Agents do not move
  std::unique_ptr<llm::StoreRecorder> recorder_;
  std::unique_ptr<llm::Client> client_;
  std::unique_ptr<Generator> generator_;
  std::unique_ptr<Critic> critic_;
};

// Whether the session pre-builds candidates while they wait for the device (docs/search.md):
// prebuild `on`, or `auto` on a GPU backend (on the CPU a compile would compete with the timed
// candidate for the cores). Off by default: opt-in until measured on the GPU.
bool prebuild_wanted(const Options& o);

// Writes report.json and report.md into o.out_dir and returns the report, which names the store
// (`db`) and both files.
util::Result<nlohmann::json> write_reports(const Options& o, const Outcome& outcome,
                                           const std::filesystem::path& db);

}  // namespace ok::optimize
