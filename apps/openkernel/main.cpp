// openkernel: the engine's command line. Thin: the commands live in src/cli.
#include <sys/prctl.h>

#include "cli/command.hpp"
#include "cli/llm_commands.hpp"

int main(int argc, char** argv) {
  // Not dumpable: the engine may hold API keys (its environment, the config file), and a
  // candidate in a GPU sandbox that shares the PID namespace can name this process's threads;
  // a process that is not dumpable keeps /proc/PID/{environ,mem,maps} from processes of the same
  // user without CAP_SYS_PTRACE (docs/evaluation.md, "Sandbox"). Children get it back at exec.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  CLI::App app{"OpenKernel: turn a PyTorch reference into a faster, verified GPU kernel"};
  app.set_version_flag("--version", "openkernel 0.1.0");
  app.require_subcommand(0, 1);
  ok::cli::GlobalOptions g;
  ok::cli::Action action;
  ok::cli::add_evaluate_command(app, g, action);
  ok::cli::add_problems_command(app, g, action);
  ok::cli::add_optimize_command(app, g, action);
  ok::cli::add_score_commands(app, g, action);
  ok::cli::add_sweep_commands(app, g, action);
  ok::cli::add_search_commands(app, g, action);
  ok::cli::add_charts_command(app, g, action);
  ok::cli::add_traces_command(app, g, action);
  ok::cli::add_example_command(app, g, action);
  ok::cli::add_llm_commands(app, g, action);
  ok::cli::add_hub_command(app, g, action);
  ok::cli::add_skills_command(app, g, action);
  return ok::cli::run_app(app, argc, argv, action);
}
