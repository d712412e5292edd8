#include "optimize/agents.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "llm/extract.hpp"
#include "llm/json_schema.hpp"
#include "llm/provider.hpp"
#include "optimize/prompts.hpp"
#include "optimize/trajectory.hpp"
#include "profile/profile.hpp"
#include "util/paths.hpp"

namespace ok::optimize {

using nlohmann::json;

namespace {

double num(const json& j, const char* key, double fallback = 0) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return fallback;
  return j[key].get<double>();
}

std::string gbps(double bytes_per_s) {
  return fmt::format("{:.0f} GB/s", bytes_per_s / 1e9);
}

}  // namespace

const json& diagnosis_schema() {
  static const json schema = json::parse(R"({
    "type": "object",
    "required": ["bottleneck", "evidence", "suggestions", "expected_gain"],
    "properties": {
      "bottleneck": {"type": "string", "enum": ["memory", "compute", "latency", "launch",
                                                "occupancy", "correctness"]},
      "evidence": {"type": "array", "items": {"type": "string"}},
      "suggestions": {"type": "array", "items": {
        "type": "object", "required": ["action", "expected_gain"],
        "properties": {"action": {"type": "string"}, "expected_gain": {"type": "number"},
                       "rationale": {"type": "string"}}}},
      "expected_gain": {"type": "number"},
      "profile_request": {"type": "boolean"}
    }
  })");
  return schema;
}

std::string failure_text(const json& result) {
  if (result.value("correct", false) && result.value("valid", true)) return "";
  std::string out;
  if (result.contains("reasons") && result["reasons"].is_array())
    for (const auto& r : result["reasons"])
      if (r.is_string()) out += (out.empty() ? "" : "\n") + r.get<std::string>();
  return out;
}

json summarize_result(const json& r) {
  json s = json::object();
  for (const char* k : {"verdict", "flags", "reasons", "roofline", "compile_s", "max_abs_error",
                        "max_rel_error", "device"})
    if (r.contains(k)) s[k] = r[k];
  // Medians, and the standard errors that say how far a speedup can be trusted (docs/tsv.md).
  for (auto [k, stderr_key] : {std::pair{"runtime_us", "runtime_stderr_us"},
                               std::pair{"ref_runtime_us", "ref_runtime_stderr_us"}})
    if (r.contains(k) && r[k].is_object()) {
      s[k] = r[k].value("median", json(nullptr));
      if (r[k].contains("stderr") && r[k]["stderr"].is_number()) s[stderr_key] = r[k]["stderr"];
    }
  if (r.contains("profile") && r["profile"].is_object()) {
    const json& p = r["profile"];
    s["profile"] = {{"kernel_table", p.value("kernel_table", json::array())},
                    {"op_table", p.value("op_table", json::array())},
                    {"torch_ops", p.value("torch_ops", json::array())}};
    // A deeper tier: which ran and its flags (its metrics reach the critic through the rule-based
    // reading, profile::refine_diagnosis, within a kilobyte).
    if (p.contains("tier") && p["tier"].is_string() && p["tier"] != "basic") {
      s["profile"]["tier"] = p["tier"];
      if (p.contains("kernel_metrics") && p["kernel_metrics"].is_array())
        s["profile"]["kernels_profiled"] = p["kernel_metrics"].size();
    }
    if (p.contains("flags") && p["flags"].is_array() && !p["flags"].empty())
      s["profile"]["flags"] = p["flags"];
  }
  return s;
}

json heuristic_diagnosis(const ProblemContext& problem, const Attempt& attempt, const json& r) {
  json evidence = json::array();
  json suggestions = json::array();
  auto suggest = [&](std::string action, double gain, std::string why) {
    suggestions.push_back(
        {{"action", std::move(action)}, {"expected_gain", gain}, {"rationale", std::move(why)}});
  };
  const std::string verdict = r.value("verdict", attempt.verdict);
  if (verdict != "correct") {
    std::string why = trim_middle(failure_text(r).empty() ? attempt.error : failure_text(r), 600);
    evidence.push_back(fmt::format("verdict {}", verdict));
    if (!why.empty()) evidence.push_back(why);
    if (verdict == "compile_error") {
      suggest("fix the compile error quoted in the evidence; keep the kernel's structure", 0,
              "a candidate that does not build cannot be timed");
    } else if (verdict == "incorrect") {
      suggest(
          "check indexing, masking of the tail, the reduction's identity and the "
          "accumulation dtype (accumulate in float32)",
          0, "outputs differ from the reference beyond the tolerance");
    } else if (verdict == "rejected") {
      suggest(
          "remove what the integrity rule objects to (named in the evidence); launch the "
          "kernel on the current stream and compute every output in it",
          0, "rejected candidates never count, however fast");
    } else {
      suggest("make the candidate run to completion: bounds, memory, grid limits", 0,
              "it crashed or timed out");
    }
    return {{"bottleneck", "correctness"},
            {"evidence", evidence},
            {"suggestions", suggestions},
            {"expected_gain", 0.0},
            {"source", "heuristic"}};
  }
  const json roof = r.value("roofline", json::object());
  const double runtime = r.contains("runtime_us") && r["runtime_us"].is_object()
                             ? num(r["runtime_us"], "median")
                             : attempt.runtime_us.value_or(0);
  const double flops = num(roof, "flops", num(problem.inspect, "flops"));
  const double bytes = num(roof, "bytes", num(problem.inspect, "bytes"));
  const double bw = num(roof, "bandwidth_bytes_per_s");
  const double peak = num(roof, "peak_flops");
  const double sol = num(roof, "fraction_of_speed_of_light");
  int launches = 0;
  if (r.contains("profile") && r["profile"].contains("kernel_table"))
    for (const auto& k : r["profile"]["kernel_table"]) launches += k.value("launches", 0);
  const bool gpu = problem.backend != "cpu";
  if (runtime > 0 && bytes > 0)
    evidence.push_back(fmt::format("achieved {} of {} measured ({:.0f}% of the copy bandwidth)",
                                   gbps(bytes / (runtime * 1e-6)), gbps(bw),
                                   bw > 0 ? 100 * bytes / (runtime * 1e-6) / bw : 0));
  if (runtime > 0 && flops > 0 && peak > 0)
    evidence.push_back(fmt::format("{:.2f} TFLOP/s achieved against a peak of {:.0f} TFLOP/s",
                                   flops / (runtime * 1e-6) / 1e12, peak / 1e12));
  if (sol > 0) evidence.push_back(fmt::format("{:.0f}% of speed of light", 100 * sol));
  if (launches > 0) evidence.push_back(fmt::format("{} kernel launches per forward", launches));
  const double ridge = bw > 0 ? peak / bw : 0;
  const double intensity = bytes > 0 ? flops / bytes : 0;
  std::string bottleneck;
  double gain = sol > 0 ? std::clamp(1.0 / sol - 1.0, 0.0, 10.0) : 0.5;
  if (gpu && runtime > 0 && runtime < 15 && launches > 1) {
    bottleneck = "launch";
    suggest("fuse the kernels into one launch", std::min(gain, 1.0),
            "several launches for a few microseconds of work");
  } else if (gpu && runtime > 0 && runtime < 8) {
    bottleneck = "latency";
    suggest("give each program more work and fewer synchronisations", std::min(gain, 0.5),
            "the whole forward takes a few microseconds");
  } else if (ridge > 0 && intensity >= ridge) {
    bottleneck = "compute";
    suggest(gpu ? "use tensor cores (tl.dot / mma) with larger tiles"
                : "block for cache and "
                  "vectorise the inner loop",
            gain, "the arithmetic intensity is above the device's ridge point");
  } else if (sol > 0 && sol < 0.5 && gpu) {
    bottleneck = "occupancy";
    suggest("raise parallelism: more programs or warps, smaller per-program tiles", gain,
            "far below the bandwidth ceiling for a memory-bound problem");
    suggest("vectorise loads (128-bit) and keep accesses coalesced", gain / 2,
            "memory-bound kernels need wide, coalesced transactions");
  } else {
    bottleneck = "memory";
    suggest("read and write each byte once: fuse producers and consumers, avoid extra passes", gain,
            "the problem is memory-bound (intensity below the ridge point)");
    suggest(gpu ? "vectorise loads and stores (128-bit) and tune the block size"
                : "vectorise (SIMD) and parallelise across cores with static chunks",
            gain / 2, "closer to the measured copy bandwidth");
  }
  if (intensity > 0)
    evidence.push_back(
        fmt::format("arithmetic intensity {:.2f} FLOP/byte, ridge point {:.1f}", intensity, ridge));
  json d = {{"bottleneck", bottleneck},
            {"evidence", evidence},
            {"suggestions", suggestions},
            {"expected_gain", gain},
            {"source", "heuristic"}};
  profile::refine_diagnosis(d, r.value("profile", json()));  // a deep profile's class wins
  return d;
}

namespace {

// One model request from a system and a user prompt template rendered with `ctx`.
util::Result<llm::Request> prompt_request(const Template& system, const Template& user,
                                          const json& ctx, const char* purpose,
                                          const std::string& session, int max_tokens) {
  auto sys_text = render(system, ctx);
  if (!sys_text) return std::unexpected(sys_text.error());
  auto user_text = render(user, ctx);
  if (!user_text) return std::unexpected(user_text.error());
  llm::Request req;
  req.system = std::move(*sys_text);
  req.messages.push_back({llm::Role::kUser, std::move(*user_text)});
  req.purpose = purpose;
  req.session = session;
  req.max_tokens = max_tokens;
  return req;
}

class HeuristicCritic final : public Critic {
 public:
  json diagnose(const ProblemContext& p, const Attempt& a, const json& r, double& cost) override {
    cost = 0;
    return heuristic_diagnosis(p, a, r);
  }
};

// Guidance from data/skills: every skill of this backend contributes its `guidance` text.
json skills_context(const std::filesystem::path& dir, const std::string& backend) {
  json out = json::array();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto text = util::read_file(f);
    if (!text) continue;
    json j = json::parse(*text, nullptr, false);
    if (!j.is_object() || j.value("backend", backend) != backend) continue;
    std::string g = j.value("guidance", "");
    if (g.empty()) g = j.value("description", "");
    if (!g.empty()) out.push_back({{"id", j.value("id", f.stem().string())}, {"guidance", g}});
  }
  return out;
}

json problem_context(const ProblemContext& p) {
  json inputs = json::array();
  for (const auto& i : p.inspect.value("inputs", json::array()))
    inputs.push_back(
        {{"shape", i.value("shape", json::array()).dump()}, {"dtype", i.value("dtype", "")}});
  json dev = p.device.is_object() ? p.device : json::object();
  std::vector<std::string> specs;
  for (const auto& [k, v] : dev.items())
    if (!v.is_object() && !v.is_array() && !v.is_null())
      specs.push_back(k + ": " + (v.is_string() ? v.get<std::string>() : v.dump()));
  return {{"name", p.name},
          {"reference_source", p.source},
          {"backend", p.backend},
          {"backend_" + p.backend, true},
          {"inputs", inputs},
          {"flops", p.inspect.value("flops", json(nullptr))},
          {"bytes", p.inspect.value("bytes", json(nullptr))},
          {"device_specs", specs}};
}

class LlmGenerator final : public Generator {
 public:
  LlmGenerator(llm::Client& c, std::filesystem::path prompts, std::filesystem::path skills,
               std::string session, PromptBudgets budgets)
      : client_(c),
        prompts_(std::move(prompts)),
        skills_(std::move(skills)),
        session_(std::move(session)),
        budgets_(budgets) {}

  std::string name() const override { return client_.endpoint().display; }

  Generation next(const ProblemContext& p, const std::vector<Attempt>& all,
                  const search::Direction* direction, llm::StreamSink* text) override {
    Generation g;
    // best-of-n: an independent sample, the same prompt every time.
    static const std::vector<Attempt> kNone;
    const std::vector<Attempt>& history = direction && direction->fresh ? kNone : all;
    auto system = load_template(prompts_, "generator_system");
    auto user = load_template(prompts_, "generator");
    if (!system || !user) {
      g.error = (system ? user.error() : system.error()).message;
      g.exhausted = true;
      return g;
    }
    json ctx = problem_context(p);
    ctx["direction"] = direction && direction->intent >= 0 && !direction->title.empty()
                           ? json{{"title", direction->title}, {"rationale", direction->rationale}}
                           : json(nullptr);
    ctx["guidance"] = p.guidance.empty() ? json(nullptr) : json(p.guidance);
    ctx["skills"] = skills_context(skills_, p.backend);
    ctx["has_skills"] = !ctx["skills"].empty();
    // The fed skills re-ranked for this generation by what the session has learnt so far.
    const auto library =
        skills::rerank(p.library, skills_query(history, direction ? direction->title : ""));
    const FittedPrompt memory = fit_memory(*user, history, library);
    memory.merge_into(ctx);
    auto made = prompt_request(*system, *user, ctx, "generator", session_, 8192);
    if (!made) {
      g.error = made.error().message;
      g.exhausted = true;
      return g;
    }
    llm::Request req = std::move(*made);
    req.temperature = 0.7;
    req.prompt_sections = memory.summary();
    if (direction) req.attempt_number = direction->sequence;
    g.params = {{"prompt", "generator"},
                {"prompt_version", user->version},
                {"system_version", system->version},
                {"model", name()}};
    auto r = client_.complete(req, text);
    g.params["prompt_tokens"] = {
        {"estimated", llm::wire::estimate_input_tokens(req)},
        {"reported", r && !r->usage.estimated ? json(r->usage.input_tokens) : json(nullptr)}};
    if (!r) {
      g.error = "the model call failed: " + r.error().message;
      g.exhausted = r.error().kind == util::ErrorKind::kBudget ||
                    r.error().kind == util::ErrorKind::kCancelled ||
                    r.error().kind == util::ErrorKind::kAuth;
      return g;
    }
    g.cost_usd = r->cost_usd.value_or(0);
    auto code = llm::extract_code(r->text, "python");
    if (!code || code->code.find("class ModelNew") == std::string::npos) {
      g.error =
          "malformed model reply: no Python code block defining class ModelNew (reply "
          "began: " +
          trim_middle(r->text, 300) + ")";
      return g;
    }
    if (!code->closed) {
      g.error =
          "malformed model reply: the code block was cut off (stop reason " + r->stop_reason + ")";
      return g;
    }
    g.source = code->code;
    // The first prose line before the code, if any, describes the attempt.
    std::string desc = r->text.substr(0, r->text.find("```"));
    desc = desc.substr(0, desc.find('\n'));
    g.description = desc.empty() ? "model-written candidate" : trim_middle(desc, 160);
    return g;
  }

 private:
  // The trajectory memory's sections and the skill library's fitted to their budgets, measured
  // as `user` renders them.
  FittedPrompt fit_memory(const Template& user, const std::vector<Attempt>& history,
                          const std::vector<skills::RankedSkill>& library) const {
    std::map<int, std::string> sources;
    for (int n : attempts_needing_code(history, budgets_))
      for (const auto& a : history)
        if (a.number == n && !sources.count(n))
          if (auto src = util::read_file(a.path)) sources[n] = *src;
    const Measure measure = template_measure(user);
    return fit_trajectory(history, sources, budgets_, measure,
                          {skills_section(library, budgets_, measure)});
  }

  llm::Client& client_;
  std::filesystem::path prompts_, skills_;
  std::string session_;
  PromptBudgets budgets_;
};

class LlmCritic final : public Critic {
 public:
  LlmCritic(llm::Client& c, std::filesystem::path prompts, std::string session)
      : client_(c), prompts_(std::move(prompts)), session_(std::move(session)) {}

  json diagnose(const ProblemContext& p, const Attempt& a, const json& r, double& cost) override {
    cost = 0;
    json fallback = heuristic_diagnosis(p, a, r);
    auto system = load_template(prompts_, "critic_system");
    auto user = load_template(prompts_, "critic");
    if (!system || !user)
      return with_note(fallback, (system ? user.error() : system.error()).message);
    json ctx = problem_context(p);
    auto cand = util::read_file(a.path);
    ctx["candidate_source"] = cand ? *cand : std::string("(unavailable)");
    ctx["verdict"] = a.verdict;
    ctx["error"] = trim_middle(a.error, 2000);
    ctx["has_error"] = !a.error.empty();
    ctx["evaluation"] = summarize_result(r).dump(2);
    ctx["heuristic"] = fallback.dump(2);
    auto made = prompt_request(*system, *user, ctx, "critic", session_, 2048);
    if (!made) return with_note(fallback, made.error().message);
    llm::Request req = std::move(*made);
    req.attempt_number = a.number;
    auto reply = client_.complete_json(req, diagnosis_schema());
    if (!reply)
      return with_note(fallback, "the model's diagnosis failed: " + reply.error().message);
    cost = reply->response.cost_usd.value_or(0);
    json d = reply->value;
    d["source"] = "model";
    return d;
  }

 private:
  static json with_note(json d, const std::string& note) {
    d["note"] = note;
    return d;
  }
  llm::Client& client_;
  std::filesystem::path prompts_;
  std::string session_;
};

}  // namespace

std::unique_ptr<Critic> make_heuristic_critic() {
  return std::make_unique<HeuristicCritic>();
}

std::unique_ptr<Generator> make_llm_generator(llm::Client& client, std::filesystem::path prompts,
                                              std::filesystem::path skills_dir, std::string session,
                                              PromptBudgets budgets) {
  return std::make_unique<LlmGenerator>(client, std::move(prompts), std::move(skills_dir),
                                        std::move(session), budgets);
}

std::unique_ptr<Critic> make_llm_critic(llm::Client& client, std::filesystem::path prompts,
                                        std::string session) {
  return std::make_unique<LlmCritic>(client, std::move(prompts), std::move(session));
}

}  // namespace ok::optimize
