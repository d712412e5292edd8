// The model registry (data/models/recommended.json) and how a --model name becomes an Endpoint:
// the API to speak, the URL, the model id and the API key.
//
// Name forms: a registry name or alias (`claude-sonnet-4`), or `provider/model` with any model id
// (`openai/gpt-5`, `openrouter/deepseek/deepseek-chat-v3.1`, `openai/<anything>` with a base URL).
// Key order (docs/llm.md): --api-key-env VAR if given (only that), else OPENKERNEL_API_KEY, else
// the provider's own variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...), else the config file's
// api_key. A loopback base URL needs no key. Registry and Endpoint are plain values; an Endpoint
// holds the key in memory and must never be printed whole (see mask_key).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace ok::llm {

enum class Api { kOpenAI, kAnthropic };
std::string_view api_name(Api api);

struct ProviderInfo {
  std::string name;  // openai, anthropic, openrouter, ...
  Api api = Api::kOpenAI;
  std::string base_url;
  std::string key_env;                 // empty: the provider needs no key
  bool max_completion_tokens = false;  // send max_completion_tokens instead of max_tokens
};

struct ModelInfo {
  std::string name;
  std::vector<std::string> aliases;
  std::string provider;
  std::string id;  // the id sent to the API
  int64_t context_window = 0;
  int64_t max_output_tokens = 0;
  double price_in_per_mtok = 0;  // USD per million tokens
  double price_out_per_mtok = 0;
  std::optional<double> price_cached_in_per_mtok;
  std::vector<std::string> strengths;
  std::string cost_tier;   // low, medium, high
  bool reasoning = false;  // no temperature; the output budget includes reasoning tokens
  std::string notes;
};

class Registry {
 public:
  // `origin` names the text's source in error messages.
  static util::Result<Registry> parse(std::string_view json_text, std::string_view origin);
  static util::Result<Registry> load(const std::filesystem::path& path);
  static std::filesystem::path default_path();  // resource_root()/data/models/recommended.json
  static util::Result<Registry> load_default();

  const std::vector<ModelInfo>& models() const { return models_; }
  const std::vector<ProviderInfo>& providers() const { return providers_; }
  const ModelInfo* find_model(std::string_view name) const;  // by name or alias
  // By provider and id, name or alias (so `anthropic/claude-sonnet-4-5` finds its prices).
  const ModelInfo* find_by_id(std::string_view provider, std::string_view id) const;
  const ProviderInfo* find_provider(std::string_view name) const;

 private:
  std::vector<ProviderInfo> providers_;
  std::vector<ModelInfo> models_;
};

// What a caller asks for; every field but `model` is optional.
struct EndpointSpec {
  std::string model;
  std::optional<std::string> base_url;
  std::optional<std::string> api_key_env;     // --api-key-env: use only this variable
  std::optional<std::string> config_api_key;  // api_key from the config file
};

struct Endpoint {
  ProviderInfo provider;
  std::string model_id;           // sent to the API
  std::string display;            // registry name or provider/model, for output
  std::string base_url;           // without a trailing slash
  std::optional<ModelInfo> info;  // prices and limits when the registry knows the model
  std::string api_key;            // empty for a keyless local server
  std::string key_source;         // "$ANTHROPIC_API_KEY", "the config file", "none needed"
};

using EnvLookup = std::function<std::optional<std::string>(const char*)>;

// The endpoint without its key: kUsage on an unknown model or provider or a bad base URL.
util::Result<Endpoint> resolve_model(const Registry& registry, std::string_view model,
                                     const std::optional<std::string>& base_url);

// Fails with kUsage, before any network traffic, on an unknown model or provider or a missing key;
// the message says what to set.
util::Result<Endpoint> resolve_endpoint(const Registry& registry, const EndpointSpec& spec,
                                        const EnvLookup& env = {});

// True for http(s) URLs whose host is localhost, 127.x.y.z or [::1].
bool is_loopback_url(std::string_view url);

}  // namespace ok::llm
