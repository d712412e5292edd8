#include "cli/command.hpp"

#include <fmt/core.h>

#include <exception>

#include "util/error.hpp"

namespace ok::cli {

int report_error(const util::Error& e) {
  fmt::print(stderr, "openkernel: error: {}\n", e.message);
  return util::exit_code(e);
}

int run_app(CLI::App& app, int argc, char** argv, Action& action) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  if (!action) {
    fmt::print(stderr, "{}", app.help());
    return 2;
  }
  try {
    return action();
  } catch (const std::exception& e) {
    fmt::print(stderr, "openkernel: internal error: {}\n", e.what());
    return 1;
  }
}

}  // namespace ok::cli
