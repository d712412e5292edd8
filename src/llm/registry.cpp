#include "llm/registry.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "util/paths.hpp"

namespace ok::llm {

using nlohmann::json;
using util::ErrorKind;
using util::fail;

std::string_view api_name(Api api) {
  return api == Api::kAnthropic ? "anthropic" : "openai";
}

namespace {

util::Result<ProviderInfo> parse_provider(const json& j) {
  ProviderInfo p;
  p.name = j.at("name").get<std::string>();
  const auto api = j.at("api").get<std::string>();
  if (api == "openai") {
    p.api = Api::kOpenAI;
  } else if (api == "anthropic") {
    p.api = Api::kAnthropic;
  } else {
    return fail(ErrorKind::kBadInput,
                fmt::format("provider {} has unknown api '{}' (openai or anthropic)", p.name, api));
  }
  p.base_url = j.at("base_url").get<std::string>();
  p.key_env = j.value("key_env", "");
  p.max_completion_tokens = j.value("max_completion_tokens", false);
  return p;
}

ModelInfo parse_model(const json& j) {
  ModelInfo m;
  m.name = j.at("name").get<std::string>();
  m.aliases = j.value("aliases", std::vector<std::string>{});
  m.provider = j.at("provider").get<std::string>();
  m.id = j.at("id").get<std::string>();
  m.context_window = j.at("context_window").get<int64_t>();
  m.max_output_tokens = j.value("max_output_tokens", int64_t{0});
  m.price_in_per_mtok = j.at("price_in_per_mtok").get<double>();
  m.price_out_per_mtok = j.at("price_out_per_mtok").get<double>();
  if (j.contains("price_cached_in_per_mtok"))
    m.price_cached_in_per_mtok = j["price_cached_in_per_mtok"].get<double>();
  m.strengths = j.value("strengths", std::vector<std::string>{});
  m.cost_tier = j.value("cost_tier", "");
  m.reasoning = j.value("reasoning", false);
  m.notes = j.value("notes", "");
  return m;
}

bool names(const ModelInfo& m, std::string_view n) {
  return m.name == n || std::find(m.aliases.begin(), m.aliases.end(), n) != m.aliases.end();
}

std::string strip_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

util::Result<Registry> Registry::parse(std::string_view json_text, std::string_view origin) {
  Registry r;
  try {
    const json j = json::parse(json_text);
    for (const auto& pj : j.at("providers")) {
      auto p = parse_provider(pj);
      if (!p) return fail(ErrorKind::kBadInput, fmt::format("{}: {}", origin, p.error().message));
      r.providers_.push_back(std::move(*p));
    }
    for (const auto& mj : j.at("models")) {
      ModelInfo m = parse_model(mj);
      if (!r.find_provider(m.provider))
        return fail(ErrorKind::kBadInput, fmt::format("{}: model {} names unknown provider {}",
                                                      origin, m.name, m.provider));
      r.models_.push_back(std::move(m));
    }
  } catch (const json::exception& e) {
    return fail(ErrorKind::kBadInput,
                fmt::format("malformed model registry {}: {}", origin, e.what()));
  }
  return r;
}

util::Result<Registry> Registry::load(const std::filesystem::path& path) {
  auto text = util::read_file(path);
  if (!text) return std::unexpected(text.error());
  return parse(*text, path.string());
}

std::filesystem::path Registry::default_path() {
  return util::resource_root() / "data/models/recommended.json";
}

util::Result<Registry> Registry::load_default() {
  return load(default_path());
}

const ModelInfo* Registry::find_model(std::string_view name) const {
  for (const auto& m : models_)
    if (names(m, name)) return &m;
  return nullptr;
}

const ModelInfo* Registry::find_by_id(std::string_view provider, std::string_view id) const {
  for (const auto& m : models_)
    if (m.provider == provider && (m.id == id || names(m, id))) return &m;
  return nullptr;
}

const ProviderInfo* Registry::find_provider(std::string_view name) const {
  for (const auto& p : providers_)
    if (p.name == name) return &p;
  return nullptr;
}

bool is_loopback_url(std::string_view url) {
  const auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return false;
  std::string_view rest = url.substr(scheme + 3);
  rest = rest.substr(0, rest.find('/'));
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  std::string_view host;
  if (!rest.empty() && rest.front() == '[') {
    host = rest.substr(0, rest.find(']') + 1);
  } else {
    host = rest.substr(0, rest.find(':'));
  }
  return host == "localhost" || host == "[::1]" || host.starts_with("127.");
}

namespace {

std::string known_providers(const Registry& reg) {
  std::string out;
  for (const auto& p : reg.providers()) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

struct Key {
  std::string value;
  std::string source;
};

util::Result<Key> resolve_key(const EndpointSpec& spec, const ProviderInfo& provider,
                              const std::string& base_url, const EnvLookup& env) {
  if (spec.api_key_env) {
    if (auto v = env(spec.api_key_env->c_str())) return Key{*v, "$" + *spec.api_key_env};
    return fail(ErrorKind::kUsage,
                fmt::format("--api-key-env names {}, but {} is not set; export it or drop the flag",
                            *spec.api_key_env, *spec.api_key_env));
  }
  if (auto v = env("OPENKERNEL_API_KEY")) return Key{*v, "$OPENKERNEL_API_KEY"};
  if (!provider.key_env.empty())
    if (auto v = env(provider.key_env.c_str())) return Key{*v, "$" + provider.key_env};
  if (spec.config_api_key && !spec.config_api_key->empty())
    return Key{*spec.config_api_key, "the config file"};
  if (provider.key_env.empty() || is_loopback_url(base_url)) return Key{"", "none needed"};
  return fail(ErrorKind::kUsage,
              fmt::format("no API key for {} (model {}): set {} or OPENKERNEL_API_KEY, or run "
                          "`openkernel config --api-key KEY`",
                          provider.name, spec.model, provider.key_env));
}

}  // namespace

util::Result<Endpoint> resolve_model(const Registry& registry, std::string_view model_name,
                                     const std::optional<std::string>& base_url) {
  const std::string model(model_name);
  Endpoint ep;
  if (model.empty())
    return fail(ErrorKind::kUsage,
                "no model given: pass --model NAME (see `openkernel models`) "
                "or run `openkernel config --model NAME`");
  if (const ModelInfo* m = registry.find_model(model)) {
    ep.provider = *registry.find_provider(m->provider);
    ep.model_id = m->id;
    ep.display = m->name;
    ep.info = *m;
  } else if (const auto slash = model.find('/'); slash != std::string::npos) {
    const std::string prov = model.substr(0, slash);
    const std::string id = model.substr(slash + 1);
    const ProviderInfo* p = registry.find_provider(prov);
    if (!p)
      return fail(ErrorKind::kUsage,
                  fmt::format("unknown provider '{}' in --model {}; known providers: {} (for any "
                              "OpenAI-compatible server use openai/MODEL with --base-url URL)",
                              prov, model, known_providers(registry)));
    if (id.empty())
      return fail(ErrorKind::kUsage,
                  fmt::format("--model {} names no model after the provider", model));
    ep.provider = *p;
    ep.model_id = id;
    ep.display = model;
    if (const ModelInfo* m = registry.find_by_id(prov, id)) ep.info = *m;
  } else {
    return fail(ErrorKind::kUsage,
                fmt::format("unknown model '{}': use a name from `openkernel models`, or "
                            "provider/model such as openai/gpt-5, anthropic/claude-sonnet-4-5 or "
                            "openai/MODEL --base-url URL",
                            model));
  }
  if (base_url && !base_url->empty()) {
    if (!base_url->starts_with("http://") && !base_url->starts_with("https://"))
      return fail(ErrorKind::kUsage,
                  fmt::format("--base-url {} must start with http:// or https://", *base_url));
    ep.base_url = strip_slash(*base_url);
  } else {
    ep.base_url = strip_slash(ep.provider.base_url);
  }
  // A custom server speaking the OpenAI API takes max_tokens, as most of them do.
  if (ep.base_url != strip_slash(ep.provider.base_url)) ep.provider.max_completion_tokens = false;
  return ep;
}

util::Result<Endpoint> resolve_endpoint(const Registry& registry, const EndpointSpec& spec,
                                        const EnvLookup& env_in) {
  const EnvLookup env = env_in ? env_in : [](const char* n) { return util::getenv_str(n); };
  auto ep = resolve_model(registry, spec.model, spec.base_url);
  if (!ep) return ep;
  auto key = resolve_key(spec, ep->provider, ep->base_url, env);
  if (!key) return std::unexpected(key.error());
  ep->api_key = std::move(key->value);
  ep->key_source = std::move(key->source);
  return ep;
}

}  // namespace ok::llm
