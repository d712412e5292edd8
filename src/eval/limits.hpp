// Limits: how long and how hard a candidate is evaluated, and whether in the sandbox. One struct
// and one place for the defaults, shared by every command that evaluates candidates (evaluate,
// optimize, sweep) and the requests they build (EvalRequest, optimize::Options, sweep::Options).
// The CLI declares the flags for it once (cli::add_limit_options) and checks it once
// (cli::check_limits).
#pragma once

namespace ok::eval {

struct Limits {
  int trials = 5;              // correctness trials, each with fresh inputs
  double timeout_s = 300;      // per candidate step: its build, one trial, one timed block
  double timing_budget_s = 4;  // seconds of timing before stopping short of the target precision
  int threads = 0;             // CPU threads for reference and candidate; 0: the backend's choice
  bool no_sandbox = false;     // run the candidate without the bwrap sandbox (trusted code only)
};

}  // namespace ok::eval
