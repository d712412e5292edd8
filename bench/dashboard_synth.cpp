// dashboard_synth DB [--session ID] [--attempts N] [--model NAME] [--cost-per-attempt USD]
// [--seed S] [--profile JSON_FILE]: writes a synthetic session (bench/dashboard_synth.hpp) into the
// store at DB, in one transaction. For the dashboard's bench (bench/dashboard_bench.mjs) and
// browser tests.
#include "dashboard_synth.hpp"

#include <fmt/core.h>

#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr,
               "usage: dashboard_synth DB [--session ID] [--attempts N] [--model NAME] "
               "[--cost-per-attempt USD] [--seed S] [--profile JSON_FILE]\n");
    return 2;
  }
  ok::bench::SynthOptions o;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--session")
      o.session = v;
    else if (k == "--attempts")
      o.attempts = std::stoi(v);
    else if (k == "--model")
      o.model = v;
    else if (k == "--cost-per-attempt")
      o.cost_per_attempt = std::stod(v);
    else if (k == "--seed")
      o.seed = static_cast<unsigned>(std::stoul(v));
    else if (k == "--profile") {
      std::ifstream in(v);
      if (in) o.profile = nlohmann::json::parse(in, nullptr, false);
      if (!in.is_open() || o.profile.is_null() || o.profile.is_discarded()) {
        fmt::print(stderr, "dashboard_synth: {} is not a readable JSON file\n", v);
        return 2;
      }
    } else {
      fmt::print(stderr, "dashboard_synth: unknown option {}\n", k);
      return 2;
    }
  }
  auto st = ok::store::Store::open(argv[1]);
  if (!st) {
    fmt::print(stderr, "dashboard_synth: {}\n", st.error().message);
    return 1;
  }
  std::string err;
  auto r = st->transaction([&]() -> ok::util::Result<void> {
    err = ok::bench::synthesise(*st, o);
    if (!err.empty()) return ok::util::fail(ok::util::ErrorKind::kInternal, err);
    return {};
  });
  if (!r) {
    fmt::print(stderr, "dashboard_synth: {}\n", r.error().message);
    return 1;
  }
  fmt::print("{} attempts of session {} written to {}\n", o.attempts, o.session, argv[1]);
  return 0;
}
