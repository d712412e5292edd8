// The store's schema as an ordered list of migrations. Migration i (1-based) moves the database
// from user_version i-1 to i. Append new migrations at the end; never edit a released one.
// docs/store.md documents every table.
#pragma once

#include <span>
#include <string_view>

#include "store/sqlite.hpp"

namespace ok::store {

std::span<const std::string_view> migrations();
// Applies every pending migration in one write transaction (all or nothing), so concurrent
// first opens serialise; refuses a database newer than us.
util::Result<int> migrate(Database& db);

}  // namespace ok::store
