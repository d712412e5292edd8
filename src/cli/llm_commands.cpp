// `openkernel llm ping`, `openkernel models`, `openkernel config`, `kernel-code config`.
#include "cli/llm_commands.hpp"

#include <fmt/core.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "llm/client.hpp"
#include "llm/recorder.hpp"
#include "llm/redact.hpp"
#include "store/store.hpp"
#include "util/cancel.hpp"

namespace ok::cli {

using nlohmann::json;
using util::ErrorKind;

namespace {

struct PingOptions {
  LlmOptions llm;
  std::string prompt = "Reply with the single word: pong";
  bool stream = false;
  bool json = false;
  double timeout_s = 120;
};

struct ModelsOptions {
  bool json = false;
};

struct ConfigOptions {
  std::string model;
  std::string api_key;
  std::string base_url;
  bool show = false;
};

std::filesystem::path store_path(const GlobalOptions& g, const config::Config& cfg) {
  if (!g.db.empty()) return g.db;
  if (cfg.db) return *cfg.db;
  return store::Store::default_path();
}

std::string usd(const std::optional<double>& v, bool estimated) {
  if (!v) return "unknown (no price for this model in the registry)";
  return fmt::format("${:.6f}{}", *v, estimated ? " (estimated)" : "");
}

int run_ping(const GlobalOptions& g, const PingOptions& o) {
  auto cfg = config::load_default();
  if (!cfg) return report_error(cfg.error());
  auto registry = llm::Registry::load_default();
  if (!registry) return report_error(registry.error());
  auto ep = resolve_llm(o.llm, *cfg, *registry);
  if (!ep) return report_error(ep.error());
  if (o.timeout_s <= 0) return report_error({ErrorKind::kUsage, "--timeout must be positive"});
  util::install_interrupt_handler();

  auto recorder = llm::StoreRecorder::open(store_path(g, *cfg), llm::Redactor(ep->api_key));
  if (!recorder)
    fmt::print(stderr, "openkernel: warning: the call is not recorded: {}\n",
               llm::Redactor(ep->api_key).apply(recorder.error().message));

  llm::Ledger ledger;
  llm::ClientOptions opts;
  opts.ledger = &ledger;
  opts.recorder = recorder ? recorder->get() : nullptr;
  opts.retry.max_retries = 2;
  const auto limit = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  opts.timeouts.total = limit;
  opts.timeouts.first_token = limit;
  llm::Client client(*ep, opts);

  llm::Request req;
  req.purpose = "ping";
  req.messages.push_back({llm::Role::kUser, o.prompt});
  req.stream = o.stream;
  const bool reasoning = ep->info && ep->info->reasoning;
  req.max_tokens = reasoning ? 2048 : 256;
  if (reasoning) req.reasoning_effort = "low";

  const bool live = o.stream && !o.json;
  llm::FunctionSink sink(
      [](std::string_view d) {
        fmt::print("{}", d);
        std::fflush(stdout);
      },
      [](int attempt, const util::Error& why) {
        fmt::print(stderr, "\n[attempt {} after: {}]\n", attempt, why.message);
      });
  if (live) fmt::print("reply    ");
  auto r = client.complete(req, live ? &sink : nullptr);
  if (live) fmt::print("\n");
  if (!r) return report_error(r.error());

  if (o.json) {
    json j = {{"ok", true},
              {"model", ep->display},
              {"provider", ep->provider.name},
              {"model_id", r->model},
              {"base_url", ep->base_url},
              {"key_source", ep->key_source},
              {"stream", o.stream},
              {"reply", r->text},
              {"stop_reason", r->stop_reason},
              {"input_tokens", r->usage.input_tokens},
              {"output_tokens", r->usage.output_tokens},
              {"usage_estimated", r->usage.estimated},
              {"latency_ms", r->latency_ms},
              {"ttft_ms", r->ttft_ms ? json(*r->ttft_ms) : json(nullptr)},
              {"cost_usd", r->cost_usd ? json(*r->cost_usd) : json(nullptr)},
              {"cost_estimated", r->cost_estimated},
              {"attempts", r->attempts},
              {"recorded_in", recorder ? json(store_path(g, *cfg).string()) : json(nullptr)}};
    fmt::print("{}\n", j.dump());
    return 0;
  }
  fmt::print("model    {} ({} API at {}, model id {})\n", ep->display,
             llm::api_name(ep->provider.api), ep->base_url, r->model);
  fmt::print("key      from {}\n", ep->key_source);
  if (!live) fmt::print("reply    {}\n", r->text);
  fmt::print("tokens   {} in, {} out{}\n", r->usage.input_tokens, r->usage.output_tokens,
             r->usage.estimated ? " (estimated: the API reported no usage)" : "");
  fmt::print("latency  {:.0f} ms, time to first token {}, {} attempt{}\n", r->latency_ms,
             r->ttft_ms ? fmt::format("{:.0f} ms", *r->ttft_ms) : std::string("n/a"), r->attempts,
             r->attempts == 1 ? "" : "s");
  fmt::print("cost     {}\n", usd(r->cost_usd, r->cost_estimated));
  if (recorder) fmt::print("recorded in {}\n", store_path(g, *cfg).string());
  return 0;
}

int run_models(const ModelsOptions& o) {
  auto registry = llm::Registry::load_default();
  if (!registry) return report_error(registry.error());
  if (o.json) {
    json models = json::array();
    for (const auto& m : registry->models())
      models.push_back({{"name", m.name},
                        {"aliases", m.aliases},
                        {"provider", m.provider},
                        {"id", m.id},
                        {"context_window", m.context_window},
                        {"max_output_tokens", m.max_output_tokens},
                        {"price_in_per_mtok", m.price_in_per_mtok},
                        {"price_out_per_mtok", m.price_out_per_mtok},
                        {"strengths", m.strengths},
                        {"cost_tier", m.cost_tier},
                        {"reasoning", m.reasoning}});
    json providers = json::array();
    for (const auto& p : registry->providers())
      providers.push_back({{"name", p.name},
                           {"api", llm::api_name(p.api)},
                           {"base_url", p.base_url},
                           {"key_env", p.key_env}});
    fmt::print("{}\n", json{{"models", models}, {"providers", providers}}.dump());
    return 0;
  }
  fmt::print("{:<20} {:<11} {:>9} {:>8} {:>8}  {:<7} {}\n", "NAME", "PROVIDER", "CONTEXT", "$IN/M",
             "$OUT/M", "TIER", "STRENGTHS");
  for (const auto& m : registry->models()) {
    std::string strengths;
    for (const auto& s : m.strengths) strengths += (strengths.empty() ? "" : ", ") + s;
    fmt::print("{:<20} {:<11} {:>9} {:>8.2f} {:>8.2f}  {:<7} {}\n", m.name, m.provider,
               m.context_window, m.price_in_per_mtok, m.price_out_per_mtok, m.cost_tier, strengths);
  }
  fmt::print("\nAny model also works as PROVIDER/MODEL (providers:");
  for (const auto& p : registry->providers()) fmt::print(" {}", p.name);
  fmt::print("), and any OpenAI-compatible server as openai/MODEL --base-url URL.\n");
  return 0;
}

void show_config(const config::Config& c, const std::filesystem::path& path) {
  auto v = [](const std::optional<std::string>& s) { return s ? *s : std::string("(not set)"); };
  fmt::print("config file      {}\n", path.string());
  fmt::print("model            {}\n", v(c.model));
  fmt::print("base_url         {}\n", v(c.base_url));
  fmt::print("api_key          {}\n", c.api_key ? llm::mask_key(*c.api_key) : "(not set)");
  fmt::print("python           {}\n", v(c.python));
  fmt::print("kernelbench_dir  {}\n", v(c.kernelbench_dir));
  fmt::print("db               {}\n", v(c.db));
}

int run_config(const std::string& program, const ConfigOptions& o) {
  const auto path = config::default_path();
  config::Config updates;
  if (!o.model.empty()) {
    auto registry = llm::Registry::load_default();
    if (!registry) return report_error(registry.error());
    std::optional<std::string> base =
        o.base_url.empty() ? std::nullopt : std::optional<std::string>(o.base_url);
    if (auto ep = llm::resolve_model(*registry, o.model, base); !ep)
      return report_error(ep.error());
    updates.model = o.model;
  }
  if (!o.base_url.empty()) {
    if (!o.base_url.starts_with("http://") && !o.base_url.starts_with("https://"))
      return report_error(
          {ErrorKind::kUsage,
           fmt::format("--base-url {} must start with http:// or https://", o.base_url)});
    updates.base_url = o.base_url;
  }
  if (!o.api_key.empty()) {
    std::string key = o.api_key;
    if (key == "-" && !std::getline(std::cin, key))
      return report_error({ErrorKind::kUsage, "--api-key - expects the key on standard input"});
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' '))
      key.pop_back();
    if (key.empty()) return report_error({ErrorKind::kUsage, "the API key is empty"});
    updates.api_key = key;
  }
  const bool changing = updates.model || updates.base_url || updates.api_key;
  if (changing) {
    if (auto r = config::save(path, updates); !r) return report_error(r.error());
    std::string what;
    for (const auto& [set, name] : {std::pair{updates.model.has_value(), "model"},
                                    std::pair{updates.base_url.has_value(), "base_url"},
                                    std::pair{updates.api_key.has_value(), "api_key"}})
      if (set) what += (what.empty() ? "" : ", ") + std::string(name);
    fmt::print("{}: saved {} to {} (mode 0600)\n", program, what, path.string());
    if (updates.api_key)
      fmt::print(
          "note: OPENKERNEL_API_KEY and the provider's own variable (such as "
          "ANTHROPIC_API_KEY), when set, take precedence over this key\n");
  }
  if (o.show || !changing) {
    auto cfg = config::load(path);
    if (!cfg) return report_error(cfg.error());
    show_config(*cfg, path);
  }
  return 0;
}

void add_config_options(CLI::App* cmd, ConfigOptions& o) {
  cmd->add_option("--model", o.model, "Default model (a registry name or provider/model)");
  cmd->add_option("--api-key", o.api_key,
                  "API key to store in the 0600 config file ('-' reads it from standard input)");
  cmd->add_option("--base-url", o.base_url, "Default base URL of an OpenAI-compatible server");
  cmd->add_flag("--show", o.show, "Print the configuration (the key masked)");
}

}  // namespace

void add_llm_options(CLI::App* cmd, LlmOptions& o, bool with_budget) {
  cmd->add_option("--model", o.model,
                  "Model: a registry name (see `openkernel models`) or provider/model "
                  "(default: the config's model)");
  cmd->add_option("--base-url", o.base_url,
                  "Base URL of the API, e.g. http://127.0.0.1:8000/v1 for a local server");
  cmd->add_option("--api-key-env", o.api_key_env,
                  "Environment variable holding the API key (default order: "
                  "OPENKERNEL_API_KEY, the provider's variable, the config file)");
  if (with_budget)
    cmd->add_option("--budget-usd", o.budget_usd,
                    "Stop making model calls once this many US dollars are spent")
        ->check(CLI::NonNegativeNumber);
}

std::optional<double> budget_of(const LlmOptions& o) {
  return o.budget_usd > 0 ? std::optional<double>(o.budget_usd) : std::nullopt;
}

util::Result<llm::Endpoint> resolve_llm(const LlmOptions& o, const config::Config& cfg,
                                        const llm::Registry& registry) {
  llm::EndpointSpec spec;
  const bool from_config = o.model.empty();
  spec.model = from_config ? cfg.model.value_or("") : o.model;
  if (!o.base_url.empty()) {
    spec.base_url = o.base_url;
  } else if (from_config) {
    spec.base_url = cfg.base_url;
  }
  if (!o.api_key_env.empty()) spec.api_key_env = o.api_key_env;
  spec.config_api_key = cfg.api_key;
  return llm::resolve_endpoint(registry, spec);
}

void add_llm_commands(CLI::App& app, GlobalOptions& g, Action& action) {
  auto* llm_cmd = app.add_subcommand("llm", "Talk to the configured model");
  llm_cmd->require_subcommand(1);
  auto ping = std::make_shared<PingOptions>();
  auto* ping_cmd = llm_cmd->add_subcommand("ping",
                                           "One round trip to a model: reply, tokens, "
                                           "latency, time to first token and cost");
  add_llm_options(ping_cmd, ping->llm, /*with_budget=*/false);
  ping_cmd->add_option("--prompt", ping->prompt, "What to send (default: ask for 'pong')");
  ping_cmd->add_flag("--stream", ping->stream, "Stream the reply as it arrives");
  ping_cmd->add_flag("--json", ping->json, "Print one JSON object");
  ping_cmd->add_option("--timeout", ping->timeout_s, "Seconds to wait for the reply (default 120)");
  ping_cmd->add_option("--db", g.db, "Store database that records the call");
  ping_cmd->callback([&g, &action, ping] { action = [&g, ping] { return run_ping(g, *ping); }; });

  auto models = std::make_shared<ModelsOptions>();
  auto* models_cmd = app.add_subcommand("models", "List the recommended models and their prices");
  models_cmd->add_flag("--json", models->json, "Print one JSON object");
  models_cmd->callback([&action, models] { action = [models] { return run_models(*models); }; });

  auto cfg = std::make_shared<ConfigOptions>();
  auto* cfg_cmd = app.add_subcommand("config", "Store the default model, API key and base URL");
  add_config_options(cfg_cmd, *cfg);
  cfg_cmd->callback([&action, cfg] { action = [cfg] { return run_config("openkernel", *cfg); }; });
}

void add_kernel_code_config_command(CLI::App& app, Action& action) {
  auto cfg = std::make_shared<ConfigOptions>();
  auto* cmd = app.add_subcommand("config", "Store the default model, API key and base URL");
  add_config_options(cmd, *cfg);
  cmd->callback([&action, cfg] { action = [cfg] { return run_config("kernel-code", *cfg); }; });
}

}  // namespace ok::cli
