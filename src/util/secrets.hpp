// Which environment variables look like credentials. One rule for the whole project: the engine
// drops them from the evaluation worker's environment (eval/worker.cpp) and the worker drops them
// from the candidate's (python/openkernel_worker/sandbox.py, SECRET_WORDS, kept equal to
// kSecretWords below by python/tests/test_secret_env.py). docs/evaluation.md, "Sandbox".
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace ok::util {

// A variable whose name, upper-cased, contains one of these words is treated as a secret.
inline constexpr std::array<std::string_view, 7> kSecretWords = {
    "KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH", "COOKIE"};
// Names that contain no secret but are kept whatever the words say.
inline constexpr std::array<std::string_view, 1> kSecretExempt = {"TORCH_CUDA_ARCH_LIST"};

bool is_secret_env_name(std::string_view name);
// The names of this process's environment variables that look like secrets.
std::vector<std::string> secret_env_names();

}  // namespace ok::util
