// Remote evaluation (docs/remote.md), the design in brief.
//
// Locally the engine spawns `PYTHON -u -m openkernel_worker` (eval::Worker::start) and speaks the
// JSON-lines protocol (docs/worker-protocol.md) over its stdin and stdout. Remotely the same
// protocol runs over the pipes of the system's OpenSSH client:
//   ssh -o BatchMode=yes [-p PORT] [-l USER] -- HOST sh -c '... exec PYTHON -u -m
//   openkernel_worker'
// with the user's own ~/.ssh/config, keys and agent; nothing of ours is stored. Only the launch
// (eval::Launch) and an eval::Transport differ; every caller keeps its eval::Worker.
//   - Shipping (package.hpp): the worker package (python/openkernel_worker and the op table it
//     reads, data/skills/elementwise_ops.json) is hashed; the host keeps it in
//     ${XDG_CACHE_HOME:-~/.cache}/openkernel/worker-<hash>/, sent by one `tar` over ssh only when
//     that folder lacks its READY mark. The greeting's protocol version is still checked.
//   - Files: the worker opens the engine's paths in three request fields: `reference` and
//     `candidate` (evaluate, prebuild, inspect, analyze, baseline) and `cache_dir`. The transport
//     sends the two files over the channel first (the worker's `stage` request, by SHA-256, each
//     once per connection, kept on the host by content), rewrites the fields to the staged copies
//     and the host's cache, and writes the engine's paths back into the reply, so the store records
//     exactly what a local evaluation records.
//   - Faults: a channel that closes under a request (ssh exits: the connection dropped, the host
//     rebooted, the worker was killed) is retried once on a fresh worker; a second loss is
//     util::ErrorKind::kRemoteLost, recorded as `evaluator_error` with the `remote_lost` flag.
//
//   - SLURM (slurm_worker.hpp): `srun [ARGS] --ntasks=1 --unbuffered PYTHON -u -c BOOTSTRAP`
//     runs the worker inside an allocation of its own, the protocol over srun's stdin and stdout;
//     the package travels over that channel too (nothing is assumed of a shared filesystem), and
//     the allocation ends with the worker's step.
//
// This header: the --eval-host value. Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace ok::remote {

// ssh://[user@]host[:port] (host a name, an IPv4 address or [IPv6]), or slurm[:ARGS].
struct EvalHost {
  enum class Kind { kSsh, kSlurm };
  std::string user;  // empty: ssh's own choice (~/.ssh/config, else the local user)
  std::string host;  // without brackets
  std::optional<int> port;
  Kind kind = Kind::kSsh;
  std::vector<std::string> srun_args;  // slurm: ARGS split into words
  std::string slurm_text;              // slurm: ARGS as given
  std::string url() const;             // as given, normalised: ssh://user@host:port, slurm:ARGS
};

// kUsage naming what is wrong: another scheme, an empty or malformed host, a name that could pass
// for an ssh option, a port outside 1-65535, a path or query; for slurm, an unclosed quote.
util::Result<EvalHost> parse_eval_host(std::string_view text);

// srun's options `args` without what asks for GPUs, for a worker that uses none (optimize's build
// worker): --gres's gpu entries (its other resources kept), -G/--gpus, --gpus-per-*,
// --cpus-per-gpu, --mem-per-gpu, --ntasks-per-gpu, --gpu-bind and --gpu-freq, in their
// --opt=VALUE, --opt VALUE and -GVALUE forms.
std::vector<std::string> without_gpu_requests(const std::vector<std::string>& args);

// Splits `text` into words as a POSIX shell would, without expanding anything: blanks separate,
// '...' is literal, "..." keeps \ \" \$ \` as escapes, a backslash outside quotes escapes
// the next character. nullopt for an unclosed quote or a trailing backslash.
std::optional<std::vector<std::string>> split_words(std::string_view text);

}  // namespace ok::remote
