// An evaluation worker inside a SLURM allocation: --eval-host slurm[:ARGS] (design:
// remote/host.hpp; docs/remote.md, "SLURM").
//
// `start_slurm_worker` runs
//   srun [ARGS] --job-name=openkernel-worker-PID-N-RANDOM --ntasks=1 --unbuffered PYTHON -u -c
//        BOOTSTRAP HASH OPENKERNEL_WORKER_WATCHDOG=1 [KEY=VALUE...]
// (the program from $OPENKERNEL_SRUN, default `srun`; ARGS the user's words, never through a
// shell), so srun asks for an allocation of its own and runs one task in it whose stdin and stdout
// are the channel. The bootstrap (a few lines of Python, nothing installed on the node) says
// whether the node's cache (${XDG_CACHE_HOME:-~/.cache}/openkernel/worker-HASH) holds the worker
// package; when it does not, the engine sends the package's tar down the same channel (no shared
// filesystem is assumed), and the bootstrap unpacks it, marks it READY and execs the worker with
// the watchdog on and KEY=VALUE in its environment.
//
// The allocation ends with the step: when the engine lets the worker go (its Worker destroyed,
// replaced or stopped: optimize stops it before starting its successor) srun's input is closed, the
// idle worker exits and srun with it; a srun that has not ended 15 s later, or that was killed
// (Ctrl-C, a timeout), is followed by `scancel --name` of its job (also after a start that failed:
// the allocation may have been granted). When the engine dies, srun's input ends, the worker's
// watchdog stops it and the job ends the same way. A job that ends under a request (expired,
// pre-empted, scancel) is a lost channel: retried once in a fresh allocation after `scancel` of the
// old one (transport.hpp), then kRemoteLost. Not thread-safe, like every Worker.
#pragma once

#include <string>
#include <vector>

#include "remote/ssh_worker.hpp"

namespace ok::remote {

// The allocation may wait in the queue: the start is given at least this long (Ctrl-C stops it).
inline constexpr std::chrono::seconds kSlurmStartTimeout{600};

util::Result<eval::Worker> start_slurm_worker(const RemoteWorkerOptions& opts);

// The srun command line for the package `hash` (exposed for tests).
std::vector<std::string> srun_argv(const RemoteWorkerOptions& opts, const std::string& hash,
                                   const std::string& job_name);

}  // namespace ok::remote
