#include "traces/datasets.hpp"

#include <cmath>
#include <tuple>

namespace ok::traces {

namespace {

using nlohmann::json;

json message(const std::string& role, const std::string& content) {
  return {{"role", role}, {"content", content}};
}

// The prompt made for attempts without a recorded model call (the builtin generator's).
json synthesized_prompt(const json& row, const std::string& reference) {
  std::string backend = row["backend"].get<std::string>();
  return json::array(
      {message("system",
               "You write fast, correct kernels. Reply with one Python code block that defines "
               "class ModelNew, a drop-in replacement for Model with the same inputs and outputs."),
       message("user", "Write ModelNew for the " + backend +
                           " backend, faster than this PyTorch reference:\n\n```python\n" +
                           reference + "\n```")});
}

double number(const json& j, double fallback = 0) {
  return j.is_number() ? j.get<double>() : fallback;
}

}  // namespace

std::vector<json> training_pairs(const std::vector<json>& rows,
                                 const std::map<std::string, std::string>& reference_source) {
  std::vector<json> out;
  for (const auto& r : rows) {
    json messages;
    std::string source;
    if (r["messages"].is_array() && r["response"].is_string()) {
      messages = r["messages"];
      messages.push_back(message("assistant", r["response"].get<std::string>()));
      source = "recorded";
    } else if (r["code"].is_string()) {
      auto it = reference_source.find(r["session_id"].get<std::string>());
      if (it == reference_source.end() || it->second.empty()) continue;
      messages = synthesized_prompt(r, it->second);
      messages.push_back(
          message("assistant", "```python\n" + r["code"].get<std::string>() + "\n```"));
      source = "synthesized";
    } else {
      continue;
    }
    json p = {{"messages", messages}, {"prompt_source", source}};
    for (const char* k :
         {"reward", "reward_compile", "verdict", "correct", "speedup", "speedup_compile",
          "session_id", "attempt", "problem_name", "problem_hash", "benchmark", "benchmark_id",
          "backend", "hardware", "model", "generator", "code_hash"})
      p[k] = r[k];
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<json> strategy_rewards(const std::vector<json>& session_rows) {
  struct Acc {
    std::map<std::string, double> best;  // session -> best correct speedup (absent: none)
    std::map<std::string, bool> sessions;
    int attempts = 0, correct = 0, rewarded = 0;
    double reward_sum = 0;
  };
  std::map<std::tuple<json, json>, Acc> groups;
  for (const auto& r : session_rows) {
    Acc& a = groups[{r["strategy"], r["problem_class"]}];
    std::string session = r["session_id"].get<std::string>();
    a.sessions[session] = true;
    ++a.attempts;
    if (r["correct"].get<bool>()) ++a.correct;
    if (r["reward"].is_number()) {
      ++a.rewarded;
      a.reward_sum += r["reward"].get<double>();
    }
    if (r["correct"].get<bool>() && r["speedup"].is_number()) {
      double s = r["speedup"].get<double>();
      auto it = a.best.find(session);
      if (it == a.best.end() || s > it->second) a.best[session] = s;
    }
  }
  std::vector<json> out;
  for (const auto& [key, a] : groups) {
    double log_sum = 0;
    int improved = 0;
    for (const auto& [s, best] : a.best) {
      log_sum += std::log(best);
      if (best > 1) ++improved;
    }
    out.push_back(
        {{"strategy", std::get<0>(key)},
         {"problem_class", std::get<1>(key)},
         {"sessions", static_cast<int64_t>(a.sessions.size())},
         {"attempts", static_cast<int64_t>(a.attempts)},
         {"correct_attempts", static_cast<int64_t>(a.correct)},
         {"correct_rate", static_cast<double>(a.correct) / a.attempts},
         {"sessions_with_correct", static_cast<int64_t>(a.best.size())},
         {"sessions_faster", static_cast<int64_t>(improved)},
         {"geomean_best_speedup",
          a.best.empty() ? json() : json(std::exp(log_sum / static_cast<double>(a.best.size())))},
         {"mean_reward", a.rewarded ? json(a.reward_sum / a.rewarded) : json()}});
  }
  return out;
}

std::vector<json> critic_accuracy(const std::vector<json>& session_rows) {
  std::vector<json> out;
  for (size_t i = 0; i < session_rows.size(); ++i) {
    const json& r = session_rows[i];
    if (!r["diagnosis"].is_string()) continue;
    if (i + 1 >= session_rows.size() || session_rows[i + 1]["session_id"] != r["session_id"])
      continue;
    const json& next = session_rows[i + 1];
    // The best correct speedup of the session up to and including the diagnosed attempt.
    json best;
    for (size_t k = i + 1; k-- > 0 && session_rows[k]["session_id"] == r["session_id"];)
      if (session_rows[k]["correct"].get<bool>() && session_rows[k]["speedup"].is_number() &&
          (best.is_null() || session_rows[k]["speedup"].get<double>() > best.get<double>()))
        best = session_rows[k]["speedup"];
    json d = json::parse(r["diagnosis"].get<std::string>(), nullptr, false);
    json top = d.is_object() && d.value("suggestions", json::array()).is_array() &&
                       !d["suggestions"].empty()
                   ? d["suggestions"][0]
                   : json();
    bool next_fast = next["correct"].get<bool>() && next["speedup"].is_number();
    json gain;
    if (next_fast && best.is_number())
      gain = next["speedup"].get<double>() / best.get<double>() - 1;
    out.push_back(
        {{"session_id", r["session_id"]},
         {"attempt", r["attempt"]},
         {"next_attempt", next["attempt"]},
         {"bottleneck", r["diagnosis_bottleneck"]},
         {"diagnosis_source", r["diagnosis_source"]},
         {"suggested_action",
          top.is_object() && top.value("action", json()).is_string() ? top["action"] : json()},
         {"expected_gain", d.is_object() && d.value("expected_gain", json()).is_number()
                               ? d["expected_gain"]
                               : json()},
         {"best_before", best},
         {"next_verdict", next["verdict"]},
         {"next_speedup", next["speedup"]},
         {"realized_gain", gain},
         {"gained", next_fast && (best.is_null() || number(next["speedup"]) > number(best))},
         {"strategy", r["strategy"]},
         {"problem_class", r["problem_class"]},
         {"backend", r["backend"]}});
  }
  return out;
}

const Schema& training_pairs_schema() {
  static const Schema schema = [] {
    using P = Physical;
    auto s = [](const char* n) { return Field::primitive(n, P::kString); };
    auto d = [](const char* n) { return Field::primitive(n, P::kDouble); };
    Field role = Field::primitive("role", P::kString, false);
    Field content = Field::primitive("content", P::kString, false);
    return Schema{Field::list("messages", Field::structure("", {role, content}, false), false),
                  Field::primitive("prompt_source", P::kString, false),
                  d("reward"),
                  d("reward_compile"),
                  Field::primitive("verdict", P::kString, false),
                  Field::primitive("correct", P::kBoolean, false),
                  d("speedup"),
                  d("speedup_compile"),
                  Field::primitive("session_id", P::kString, false),
                  Field::primitive("attempt", P::kInt32, false),
                  s("problem_name"),
                  s("problem_hash"),
                  s("benchmark"),
                  s("benchmark_id"),
                  s("backend"),
                  s("hardware"),
                  s("model"),
                  s("generator"),
                  s("code_hash")};
  }();
  return schema;
}

const Schema& strategy_rewards_schema() {
  static const Schema schema = [] {
    using P = Physical;
    auto l = [](const char* n) { return Field::primitive(n, P::kInt64, false); };
    return Schema{Field::primitive("strategy", P::kString),
                  Field::primitive("problem_class", P::kString),
                  l("sessions"),
                  l("attempts"),
                  l("correct_attempts"),
                  Field::primitive("correct_rate", P::kDouble, false),
                  l("sessions_with_correct"),
                  l("sessions_faster"),
                  Field::primitive("geomean_best_speedup", P::kDouble),
                  Field::primitive("mean_reward", P::kDouble)};
  }();
  return schema;
}

const Schema& critic_accuracy_schema() {
  static const Schema schema = [] {
    using P = Physical;
    auto s = [](const char* n) { return Field::primitive(n, P::kString); };
    auto d = [](const char* n) { return Field::primitive(n, P::kDouble); };
    return Schema{Field::primitive("session_id", P::kString, false),
                  Field::primitive("attempt", P::kInt32, false),
                  Field::primitive("next_attempt", P::kInt32, false),
                  s("bottleneck"),
                  s("diagnosis_source"),
                  s("suggested_action"),
                  d("expected_gain"),
                  d("best_before"),
                  s("next_verdict"),
                  d("next_speedup"),
                  d("realized_gain"),
                  Field::primitive("gained", P::kBoolean, false),
                  s("strategy"),
                  s("problem_class"),
                  s("backend")};
  }();
  return schema;
}

}  // namespace ok::traces
