// Internal to src/store: row readers that more than one of its files use.
#pragma once

#include "store/sqlite.hpp"
#include "store/store.hpp"

namespace ok::store {

// A sessions row from columns 0..13 in this order: id, problem_id, reference, name, backend,
// model, mode, status, options, out_dir, best_attempt, best_speedup, compile_runtime_us, cost_usd.
SessionRow session_from_row(const Statement& row);

}  // namespace ok::store
