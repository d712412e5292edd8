// kernel-code: the developer tool (terminal UI, dashboard, config). Thin: commands live in src/cli.
#include "cli/command.hpp"
#include "cli/dashboard_command.hpp"
#include "cli/kernel_code_commands.hpp"
#include "cli/llm_commands.hpp"
#include "cli/sessions_command.hpp"

int main(int argc, char** argv) {
  CLI::App app{"kernel-code: OpenKernel's developer tool"};
  app.set_version_flag("--version", "kernel-code 0.1.0");
  app.require_subcommand(0, 1);
  ok::cli::GlobalOptions g;
  ok::cli::Action action;
  ok::cli::add_kernel_code_commands(app, g, action);
  ok::cli::add_kernel_code_config_command(app, action);
  ok::cli::add_sessions_command(app, g, action);
  ok::cli::add_dashboard_command(app, action);
  return ok::cli::run_app(app, argc, argv, action);
}
