#include "tui/model.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "optimize/agents.hpp"

namespace ok::tui {

using nlohmann::json;

namespace {

constexpr size_t kMaxAgents = 64, kMaxDecisions = 64, kMaxWarnings = 16;

std::optional<double> number_at(const json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

std::string string_at(const json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
  return {};
}

template <typename T>
void keep_last(std::vector<T>& v, size_t n) {
  if (v.size() > n) v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() - n));
}

// The critic's diagnosis as one paragraph and its suggested actions.
void read_diagnosis(const json& d, AgentMessage& m) {
  if (!d.is_object()) return;
  std::string text = string_at(d, "bottleneck");
  if (d.contains("evidence") && d["evidence"].is_array())
    for (const auto& e : d["evidence"])
      if (e.is_string()) text += (text.empty() ? "" : "; ") + e.get<std::string>();
  m.diagnosis = text;
  m.suggestions.clear();
  if (d.contains("suggestions") && d["suggestions"].is_array())
    for (const auto& s : d["suggestions"]) {
      std::string a = s.is_string() ? s.get<std::string>() : string_at(s, "action");
      if (!a.empty()) m.suggestions.push_back(std::move(a));
    }
}

}  // namespace

AttemptView attempt_view(const optimize::Attempt& a) {
  AttemptView v;
  v.number = a.number;
  v.verdict = a.verdict;
  v.correct = a.correct;
  v.speedup = a.speedup;
  v.runtime_us = a.runtime_us;
  v.cost_usd = a.cost_usd;
  v.wall_s = a.wall_s;
  v.description = a.description;
  v.path = a.path;
  v.generator = a.generator;
  v.error = a.error;
  v.evaluation_id = a.evaluation_id;
  const json& sum = a.summary;
  if (sum.is_object() && sum.contains("flags") && sum["flags"].is_array())
    for (const auto& f : sum["flags"])
      if (f.is_string()) v.flags.push_back(f.get<std::string>());
  v.eager_us = number_at(sum, "ref_runtime_us");
  v.compile_us = number_at(sum, "compile_runtime_us");
  v.intent = string_at(a.params, "intent");
  v.bottleneck = string_at(a.diagnosis, "bottleneck");
  return v;
}

const AttemptView* Snapshot::attempt(int number) const {
  for (const auto& a : attempts)
    if (a.number == number) return &a;
  return nullptr;
}

const AttemptView* Snapshot::best() const {
  const AttemptView* b = nullptr;
  for (const auto& a : attempts)
    if (a.correct && a.speedup && (!b || *a.speedup > *b->speedup)) b = &a;
  return b;
}

std::vector<int> Snapshot::in_flight() const {
  std::vector<int> out;
  for (const auto& m : agents)
    if (m.state != "done") out.push_back(m.number);
  return out;
}

Snapshot RunModel::snapshot() const {
  std::lock_guard lock(mu_);
  Snapshot s = s_;
  if (!s.stopped && standing_at_ != Clock::time_point{})
    s.elapsed_s =
        s.standing.elapsed_s + std::chrono::duration<double>(Clock::now() - standing_at_).count();
  return s;
}

uint64_t RunModel::version() const {
  std::lock_guard lock(mu_);
  return s_.version;
}

void RunModel::stand(const optimize::Standing& s) {
  s_.standing = s;
  s_.elapsed_s = s.elapsed_s;
  standing_at_ = Clock::now();
  ++s_.version;
}

AgentMessage& RunModel::agent(int number) {
  for (auto& m : s_.agents)
    if (m.number == number) return m;
  s_.agents.push_back(AgentMessage{.number = number, .state = "generating"});
  keep_last(s_.agents, kMaxAgents);
  return s_.agents.back();
}

void RunModel::started(const optimize::Standing& s, const optimize::SessionInfo& info) {
  std::lock_guard lock(mu_);
  stand(s);
  s_.info = info;
  s_.stopped.reset();
  s_.control = "running";
  s_.finished_this_run = 0;
}

void RunModel::control(const optimize::Standing& s, const std::string& state) {
  std::lock_guard lock(mu_);
  stand(s);
  s_.control = state;
}

void RunModel::strategy(const optimize::Standing& s, const std::string& text) {
  std::lock_guard lock(mu_);
  stand(s);
  s_.strategy = text;
}

void RunModel::generating(const optimize::Standing& s, int number, const std::string& what) {
  std::lock_guard lock(mu_);
  stand(s);
  AgentMessage& m = agent(number);
  m.title = what;
  m.state = "generating";
}

void RunModel::model_text(int number, std::string_view text) {
  std::lock_guard lock(mu_);
  std::string& t = agent(number).text;
  t.append(text);
  if (t.size() > kMaxAgentText) {
    size_t cut = t.size() - kMaxAgentText;
    while (cut < t.size() && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) ++cut;
    t.erase(0, cut);
  }
  ++s_.version;
}

void RunModel::model_retry(int number, const std::string& why) {
  std::lock_guard lock(mu_);
  AgentMessage& m = agent(number);
  m.text.clear();
  ++m.retries;
  m.retry_reason = why;
  ++s_.version;
}

void RunModel::evaluating(const optimize::Standing& s, int number, const std::string& description) {
  std::lock_guard lock(mu_);
  stand(s);
  AgentMessage& m = agent(number);
  m.state = "evaluating";
  if (m.title.empty()) m.title = description;
}

void RunModel::attempt_finished(const optimize::Standing& s, const optimize::Attempt& a) {
  std::lock_guard lock(mu_);
  stand(s);
  AttemptView v = attempt_view(a);
  AgentMessage& m = agent(a.number);
  m.state = "done";
  read_diagnosis(a.diagnosis, m);
  if (v.intent.empty()) v.intent = m.title;
  auto same = std::find_if(s_.attempts.begin(), s_.attempts.end(),
                           [&](const AttemptView& x) { return x.number == a.number; });
  if (same != s_.attempts.end())
    *same = std::move(v);  // a replayed attempt recorded again
  else
    s_.attempts.push_back(std::move(v));
  ++s_.finished_this_run;
}

// The critic's diagnosis arrives after the attempt: the agent panel shows it, the log's bottleneck,
// cost and wall time take its figures.
void RunModel::diagnosed(const optimize::Standing& s, const optimize::Attempt& a) {
  std::lock_guard lock(mu_);
  stand(s);
  read_diagnosis(a.diagnosis, agent(a.number));
  for (auto& v : s_.attempts)
    if (v.number == a.number) {
      v.bottleneck = string_at(a.diagnosis, "bottleneck");
      v.cost_usd = a.cost_usd;
      v.wall_s = a.wall_s;
    }
}

void RunModel::search_decision(const optimize::Standing& s, int intent, const std::string& kind,
                               const std::string& text) {
  std::lock_guard lock(mu_);
  stand(s);
  s_.decisions.push_back({intent, kind, text});
  keep_last(s_.decisions, kMaxDecisions);
}

void RunModel::warning(const std::string& text) {
  std::lock_guard lock(mu_);
  s_.warnings.push_back(text);
  keep_last(s_.warnings, kMaxWarnings);
  ++s_.version;
}

void RunModel::stopped(const optimize::Standing& s, const std::string& reason) {
  std::lock_guard lock(mu_);
  stand(s);
  s_.stopped = reason;
  for (auto& m : s_.agents)
    if (m.state != "done") m.state = "done";
}

}  // namespace ok::tui
