#include "traces/trace.hpp"

#include <fmt/core.h>

#include <set>

#include "score/reward.hpp"

namespace ok::traces {

namespace {

using nlohmann::json;
using util::ErrorKind;

json parse_object(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

// j[key] when it is a number, else null (also for a median inside {median, ...}).
json number_at(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end()) return nullptr;
  if (it->is_number()) return *it;
  if (it->is_object()) return number_at(*it, "median");
  return nullptr;
}

json string_at(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it != j.end() && it->is_string() && !it->get_ref<const std::string&>().empty() ? *it
                                                                                        : json();
}

json text_or_null(const std::string& s) {
  return s.empty() ? json() : json(s);
}

json compact_or_null(const json& j) {
  return j.is_null() ? json() : json(j.dump());
}

// The fields every attempt of a session shares.
json session_fields(const store::TraceSessionRow& t, const json& first_result) {
  const store::SessionRow& s = t.row;
  json options = parse_object(s.options_json);
  json intents = parse_object(t.intents_json);
  json r = {{"schema_version", kTraceSchemaVersion},
            {"session_id", s.id},
            {"session_started_at", t.created_at},
            {"session_status", s.status},
            {"mode", s.mode},
            {"model", s.model},
            {"backend", s.backend}};
  json strategy = intents.contains("strategy") ? string_at(intents["strategy"], "id") : json();
  r["strategy"] = strategy.is_null() ? string_at(options, "strategy") : strategy;
  json policy = string_at(intents, "policy");
  r["search_policy"] = policy.is_null() ? string_at(options, "search") : policy;
  r["problem_class"] = string_at(intents, "problem_class");
  json budgets = json::object();
  for (const char* k :
       {"iterations", "budget_usd", "budget_wall_s", "budget_device_s", "in_flight"})
    if (options.contains(k)) budgets[k] = options[k];
  r["budgets"] = budgets.dump();
  r["problem_name"] = t.problem ? t.problem->name : s.name;
  r["problem_hash"] = t.problem ? json(t.problem->source_hash) : json();
  json level =
      t.problem && t.problem->level ? json(*t.problem->level) : number_at(options, "level");
  json number = t.problem && t.problem->problem_number ? json(*t.problem->problem_number)
                                                       : number_at(options, "number");
  r["problem_level"] = level.is_number_integer() && level.get<int>() > 0 ? level : json();
  r["problem_number"] = number.is_number_integer() && number.get<int>() > 0 ? number : json();
  // KernelBench problems are the ones found by level and number (docs/traces.md).
  bool public_set = r["problem_level"].is_number() && r["problem_number"].is_number();
  r["benchmark"] = public_set ? json("KernelBench") : json();
  r["benchmark_id"] =
      public_set
          ? json(fmt::format("level{}/{}_{}", r["problem_level"].get<int>(),
                             r["problem_number"].get<int>(), r["problem_name"].get<std::string>()))
          : json();
  r["device"] = string_at(first_result, "device");
  json hardware = text_or_null(t.device_name);
  if (hardware.is_null() && s.backend == "cpu") hardware = "cpu";
  r["hardware"] = hardware;
  json versions = first_result.value("versions", json::object());
  for (const char* k : {"python", "torch", "triton", "cuda", "driver", "nvcc"})
    r[std::string(k) + "_version"] = string_at(versions, k);
  return r;
}

// The prompt and reply of a recorded LLM call: [{role, content}] with the system prompt first.
void add_call(json& row, const store::TraceLlmCall& c) {
  json req = parse_object(c.request_json);
  json messages = json::array();
  if (req.value("system", "") != "")
    messages.push_back({{"role", "system"}, {"content", req["system"]}});
  for (const auto& m : req.value("messages", json::array()))
    if (m.is_object())
      messages.push_back({{"role", m.value("role", "user")}, {"content", m.value("content", "")}});
  row["messages"] = messages;
  row["response"] = c.response ? json(*c.response) : json();
  row["prompt_model"] = c.model;
}

void add_evaluation(json& row, const json& r, const store::SessionRow& s) {
  bool evaluated = !r.empty();
  row["compiled"] = evaluated && r.contains("compiled") ? r["compiled"] : json();
  json flags = json::array();
  for (const auto& f : r.value("flags", json::array()))
    if (f.is_string()) flags.push_back(f);
  row["flags"] = evaluated ? flags : json();
  const json rt = r.value("runtime_us", json::object());
  row["runtime_us"] = number_at(r, "runtime_us");
  row["runtime_mean_us"] = number_at(rt, "mean");
  row["runtime_stderr_us"] = number_at(rt, "stderr");
  row["runtime_min_us"] = number_at(rt, "min");
  row["runtime_n"] = rt.contains("n") && rt["n"].is_number_integer() ? rt["n"] : json();
  row["eager_us"] = number_at(r, "ref_runtime_us");
  row["eager_stderr_us"] = number_at(r.value("ref_runtime_us", json::object()), "stderr");
  json compile_us = number_at(r, "compile_runtime_us");
  if (compile_us.is_null() && s.compile_runtime_us) compile_us = *s.compile_runtime_us;
  row["compile_us"] = compile_us;
  row["max_abs_error"] = number_at(r, "max_abs_error");
  row["max_rel_error"] = number_at(r, "max_rel_error");
  row["timing_mode"] = r.contains("timing") ? string_at(r["timing"], "mode") : json();
  row["profile"] = compact_or_null(r.value("profile", json()));
  const json roof = r.value("roofline", json());
  row["roofline_fraction"] = number_at(roof, "fraction_of_speed_of_light");
  row["roofline_floor_us"] = number_at(roof, "floor_us");
  row["roofline"] = compact_or_null(roof);
  json sc = number_at(r, "speedup_compile");
  if (sc.is_null() && row["correct"].get<bool>() && compile_us.is_number() &&
      row["runtime_us"].is_number() && row["runtime_us"].get<double>() > 0)
    sc = compile_us.get<double>() / row["runtime_us"].get<double>();
  row["speedup_compile"] = row["correct"].get<bool>() ? sc : json();
}

json attempt_row(const json& session, const store::AttemptRow& a,
                 const std::optional<std::string>& source) {
  json row = session;
  row["attempt"] = a.number;
  row["generator"] = a.generator;
  row["messages"] = nullptr;
  row["response"] = nullptr;
  row["code"] = source ? json(*source) : json();
  row["code_hash"] = source ? json(code_hash(*source)) : json();
  json params = parse_object(a.params_json);
  row["intent"] = params.contains("intent") ? string_at(params["intent"], "title") : json();
  row["params"] = a.params_json;
  row["description"] = a.description;
  row["verdict"] = a.verdict;
  row["correct"] = a.correct;
  row["error"] = text_or_null(a.error);
  row["speedup"] = a.speedup ? json(*a.speedup) : json();
  json diagnosis = a.diagnosis_json.empty() ? json() : parse_object(a.diagnosis_json);
  row["diagnosis"] = text_or_null(a.diagnosis_json);
  row["diagnosis_bottleneck"] = string_at(diagnosis, "bottleneck");
  row["diagnosis_source"] = string_at(diagnosis, "source");
  row["cost_usd"] = a.cost_usd;
  row["wall_s"] = a.wall_s;
  return row;
}

void add_rewards(json& row) {
  auto value = [](std::optional<double> v) { return v ? json(*v) : json(); };
  auto speed = [&](const char* k) {
    return row[k].is_number() ? std::optional<double>(row[k].get<double>()) : std::nullopt;
  };
  std::string verdict = row["verdict"].get<std::string>();
  row["reward"] = value(score::reward(verdict, speed("speedup")));
  row["reward_compile"] = value(score::reward(verdict, speed("speedup_compile")));
}

// Links each LLM call to the attempt it served: by the attempt number its request records, else
// (calls recorded before) the k-th `generator` call to the k-th attempt of a model.
std::map<int, std::vector<const store::TraceLlmCall*>> link_calls(
    const std::vector<store::TraceLlmCall>& calls, const std::vector<store::AttemptRow>& attempts) {
  std::map<int, std::vector<const store::TraceLlmCall*>> out;
  std::vector<int> model_attempts;
  for (const auto& a : attempts)
    if (a.generator != "builtin") model_attempts.push_back(a.number);
  size_t next = 0;
  for (const auto& c : calls) {
    if (c.attempt_number) {
      out[*c.attempt_number].push_back(&c);
    } else if (c.purpose == "generator" && next < model_attempts.size()) {
      out[model_attempts[next++]].push_back(&c);
    }
  }
  return out;
}

void add_calls(json& row, const std::vector<const store::TraceLlmCall*>& calls) {
  int64_t in = 0, out = 0;
  bool any_usage = false;
  for (const auto* c : calls) {
    if (c->purpose == "generator") add_call(row, *c);
    if (c->input_tokens || c->output_tokens) any_usage = true;
    in += c->input_tokens.value_or(0);
    out += c->output_tokens.value_or(0);
  }
  row["llm_calls"] = static_cast<int>(calls.size());
  row["input_tokens"] = any_usage ? json(in) : json();
  row["output_tokens"] = any_usage ? json(out) : json();
  if (!row.contains("prompt_model")) row["prompt_model"] = nullptr;
}

bool session_passes(const json& s, const Filters& f) {
  if (!f.since.empty() && s["session_started_at"].get<std::string>() < f.since) return false;
  if (f.level && s["problem_level"] != json(*f.level)) return false;
  if (!f.backend.empty() && s["backend"] != f.backend) return false;
  if (!f.model.empty() && s["model"] != f.model) return false;
  return true;
}

bool attempt_passes(const json& row, const Filters& f) {
  if (f.correct_only && !row["correct"].get<bool>()) return false;
  if (f.min_speedup &&
      !(row["speedup"].is_number() && row["speedup"].get<double>() >= *f.min_speedup))
    return false;
  return true;
}

// One session's rows, every attempt, in attempt order.
util::Result<std::vector<json>> session_attempts(store::Store& st,
                                                 const store::TraceSessionRow& t) {
  auto attempts = st.attempts(t.row.id);
  if (!attempts) return std::unexpected(attempts.error());
  auto calls = st.trace_llm_calls(t.row.id);
  if (!calls) return std::unexpected(calls.error());
  auto linked = link_calls(*calls, *attempts);
  std::vector<json> results;
  json first_result = json::object();
  for (const auto& a : *attempts) {
    json r = json::object();
    if (a.evaluation_id) {
      auto text = st.evaluation_result(*a.evaluation_id);
      if (!text) return std::unexpected(text.error());
      if (*text) r = parse_object(**text);
    }
    if (first_result.empty() && !r.empty()) first_result = r;
    results.push_back(std::move(r));
  }
  json session = session_fields(t, first_result);
  std::vector<json> rows;
  for (size_t i = 0; i < attempts->size(); ++i) {
    const auto& a = (*attempts)[i];
    std::optional<std::string> source;
    if (a.candidate_id) {
      auto s = st.candidate_source(*a.candidate_id);
      if (!s) return std::unexpected(s.error());
      source = *s;
    }
    json row = attempt_row(session, a, source);
    add_evaluation(row, results[i], t.row);
    auto it = linked.find(a.number);
    add_calls(row, it == linked.end() ? std::vector<const store::TraceLlmCall*>{} : it->second);
    add_rewards(row);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

util::Result<Collected> collect(store::Store& st, const Filters& filters) {
  auto sessions = st.trace_sessions();
  if (!sessions) return std::unexpected(sessions.error());
  Collected out;
  out.sessions_in_store = static_cast<int>(sessions->size());
  std::set<std::pair<std::string, std::string>> seen;  // (problem hash, code hash)
  for (const auto& t : *sessions) {
    auto rows = session_attempts(st, t);
    if (!rows) return std::unexpected(rows.error());
    out.attempts_in_store += static_cast<int>(rows->size());
    if (rows->empty() || !session_passes(rows->front(), filters)) {
      out.filtered_out += static_cast<int>(rows->size());
      continue;
    }
    out.reference_source[t.row.id] = t.problem ? t.problem->source : "";
    for (auto& row : *rows) {
      out.session_rows.push_back(row);
      if (!attempt_passes(row, filters)) {
        ++out.filtered_out;
        continue;
      }
      if (filters.dedupe && row["code_hash"].is_string()) {
        auto key =
            std::make_pair(row["problem_hash"].is_string() ? row["problem_hash"].get<std::string>()
                                                           : row["problem_name"].get<std::string>(),
                           row["code_hash"].get<std::string>());
        if (!seen.insert(key).second) {
          ++out.duplicates;
          continue;
        }
      }
      out.rows.push_back(std::move(row));
    }
  }
  return out;
}

std::string normalize_code(std::string_view code) {
  std::string out;
  size_t pos = 0;
  while (pos <= code.size()) {
    size_t end = code.find('\n', pos);
    if (end == std::string_view::npos) end = code.size();
    std::string_view line = code.substr(pos, end - pos);
    pos = end + 1;
    size_t last = line.find_last_not_of(" \t\r\f\v");
    if (last == std::string_view::npos) continue;  // blank
    line = line.substr(0, last + 1);
    size_t first = line.find_first_not_of(" \t\f\v");
    if (line[first] == '#') continue;  // a comment line
    out.append(line);
    out.push_back('\n');
  }
  return out;
}

std::string code_hash(std::string_view code) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : normalize_code(code)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

const Schema& attempt_schema() {
  static const Schema schema = [] {
    using P = Physical;
    auto s = [](const char* n) { return Field::primitive(n, P::kString); };
    auto d = [](const char* n) { return Field::primitive(n, P::kDouble); };
    auto i = [](const char* n) { return Field::primitive(n, P::kInt32); };
    auto l = [](const char* n) { return Field::primitive(n, P::kInt64); };
    auto b = [](const char* n) { return Field::primitive(n, P::kBoolean); };
    auto req = [](Field f) {
      f.optional = false;
      return f;
    };
    Field message = Field::structure("", {req(s("role")), req(s("content"))}, false);
    return Schema{req(i("schema_version")),
                  req(s("session_id")),
                  req(s("session_started_at")),
                  s("session_status"),
                  s("mode"),
                  s("model"),
                  req(s("backend")),
                  s("strategy"),
                  s("search_policy"),
                  s("problem_class"),
                  s("budgets"),
                  req(s("problem_name")),
                  s("problem_hash"),
                  i("problem_level"),
                  i("problem_number"),
                  s("benchmark"),
                  s("benchmark_id"),
                  s("device"),
                  s("hardware"),
                  s("python_version"),
                  s("torch_version"),
                  s("triton_version"),
                  s("cuda_version"),
                  s("driver_version"),
                  s("nvcc_version"),
                  req(i("attempt")),
                  s("generator"),
                  Field::list("messages", message),
                  s("response"),
                  s("prompt_model"),
                  s("code"),
                  s("code_hash"),
                  s("intent"),
                  s("params"),
                  s("description"),
                  req(s("verdict")),
                  b("compiled"),
                  req(b("correct")),
                  Field::list("flags", req(s(""))),
                  s("error"),
                  d("speedup"),
                  d("speedup_compile"),
                  d("runtime_us"),
                  d("runtime_mean_us"),
                  d("runtime_stderr_us"),
                  d("runtime_min_us"),
                  i("runtime_n"),
                  d("eager_us"),
                  d("eager_stderr_us"),
                  d("compile_us"),
                  d("max_abs_error"),
                  d("max_rel_error"),
                  s("timing_mode"),
                  s("profile"),
                  d("roofline_fraction"),
                  d("roofline_floor_us"),
                  s("roofline"),
                  s("diagnosis"),
                  s("diagnosis_bottleneck"),
                  s("diagnosis_source"),
                  i("llm_calls"),
                  l("input_tokens"),
                  l("output_tokens"),
                  d("cost_usd"),
                  d("wall_s"),
                  d("reward"),
                  d("reward_compile")};
  }();
  return schema;
}

}  // namespace ok::traces
