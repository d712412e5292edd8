// Thin RAII wrappers over sqlite3: a Database connection and a prepared Statement.
//
// Statements bind by 1-based index and step row by row. Errors become util::Error values with
// sqlite's message. A Database is used from one thread at a time (SQLite's serialized mode is not
// relied upon); open one per thread if needed.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"

namespace ok::store {

class Statement {
 public:
  Statement(Statement&& o) noexcept : stmt_(std::exchange(o.stmt_, nullptr)), db_(o.db_) {}
  Statement(const Statement&) = delete;
  ~Statement();

  Statement& bind(int idx, std::string_view v);
  Statement& bind(int idx, int64_t v);
  Statement& bind(int idx, double v);
  Statement& bind(int idx, std::optional<double> v);
  Statement& bind_null(int idx);
  // NULL when absent (or, for text, empty).
  Statement& bind_or_null(int idx, const std::optional<int64_t>& v);
  Statement& bind_or_null(int idx, const std::optional<std::string>& v);
  Statement& bind_text_or_null(int idx, std::string_view v);
  // True while a row is available; error on failure.
  util::Result<bool> step();
  util::Result<void> run();  // step to completion
  // One step, then the first column as an integer (an id from RETURNING, a COUNT).
  util::Result<int64_t> step_int();
  // Every row, each made by `read(*this)` while the statement stands on it.
  template <class Read>
  auto rows(Read read) -> util::Result<std::vector<decltype(read(*this))>> {
    std::vector<decltype(read(*this))> out;
    for (;;) {
      auto r = step();
      if (!r) return std::unexpected(r.error());
      if (!*r) return out;
      out.push_back(read(*this));
    }
  }
  // The first row made by `read(*this)`, or nullopt when there is none.
  template <class Read>
  auto first_row(Read read) -> util::Result<std::optional<decltype(read(*this))>> {
    auto r = step();
    if (!r) return std::unexpected(r.error());
    if (!*r) return std::optional<decltype(read(*this))>();
    return std::optional(read(*this));
  }

  int64_t col_int(int i) const;
  double col_double(int i) const;
  std::string col_text(int i) const;
  bool col_null(int i) const;

 private:
  friend class Database;
  Statement(sqlite3_stmt* s, sqlite3* db) : stmt_(s), db_(db) {}
  sqlite3_stmt* stmt_;
  sqlite3* db_;
};

// A nullable column as an optional.
inline std::optional<int64_t> opt_int(const Statement& st, int i) {
  return st.col_null(i) ? std::nullopt : std::optional<int64_t>(st.col_int(i));
}
inline std::optional<double> opt_double(const Statement& st, int i) {
  return st.col_null(i) ? std::nullopt : std::optional<double>(st.col_double(i));
}

class Database {
 public:
  static util::Result<Database> open(const std::filesystem::path& path);
  Database(Database&& o) noexcept : db_(std::exchange(o.db_, nullptr)) {}
  Database(const Database&) = delete;
  ~Database();

  util::Result<void> exec(std::string_view sql);
  util::Result<Statement> prepare(std::string_view sql);
  int64_t last_insert_id() const;
  sqlite3* raw() const { return db_; }

 private:
  explicit Database(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

}  // namespace ok::store
