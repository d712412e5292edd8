// Errors as values across subsystem boundaries.
//
// Every subsystem returns `Result<T>` (std::expected<T, Error>) from calls that can fail on bad
// input or a broken environment. `Error::kind` decides the process exit code at the top (see
// exit_code()); the message is a complete human sentence that names the offending thing.
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace ok::util {

enum class ErrorKind {
  kUsage,        // bad flag or flag combination
  kBadInput,     // missing/unreadable/malformed input file, bad reference, unknown constant
  kEnvironment,  // no usable Python/torch, no GPU when one was asked for
  kInternal,     // a bug or a broken worker
  kTimeout,
  kNetwork,
  kAuth,         // an API rejected the credentials (HTTP 401/403)
  kRateLimited,  // an API kept answering 429 after every retry
  kServer,       // an API kept answering 5xx after every retry
  kProtocol,     // a malformed or truncated reply from a remote API
  kCancelled,    // the user interrupted (Ctrl-C)
  kBudget,       // the spending limit (--budget-usd) is reached
  kRemoteLost,   // the channel to a remote evaluation worker closed, again after one retry
};

struct Error {
  ErrorKind kind = ErrorKind::kInternal;
  std::string message;
};

template <typename T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(ErrorKind kind, std::string message) {
  return std::unexpected<Error>(Error{kind, std::move(message)});
}

// Documented exit codes: 0 success/verdict reached, 1 internal error, 2 bad usage or bad input,
// 3 the remote evaluation host was lost (docs/remote.md).
inline int exit_code(const Error& e) {
  switch (e.kind) {
    case ErrorKind::kUsage:
    case ErrorKind::kBadInput:
    case ErrorKind::kEnvironment:
      return 2;
    case ErrorKind::kRemoteLost:
      return 3;
    default:
      return 1;
  }
}

}  // namespace ok::util
