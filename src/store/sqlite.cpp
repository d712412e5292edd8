#include "store/sqlite.hpp"

namespace ok::store {

using util::ErrorKind;
using util::fail;

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int idx, std::string_view v) {
  sqlite3_bind_text(stmt_, idx, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bind(int idx, int64_t v) {
  sqlite3_bind_int64(stmt_, idx, v);
  return *this;
}
Statement& Statement::bind(int idx, double v) {
  sqlite3_bind_double(stmt_, idx, v);
  return *this;
}
Statement& Statement::bind(int idx, std::optional<double> v) {
  return v ? bind(idx, *v) : bind_null(idx);
}
Statement& Statement::bind_or_null(int idx, const std::optional<int64_t>& v) {
  return v ? bind(idx, *v) : bind_null(idx);
}
Statement& Statement::bind_or_null(int idx, const std::optional<std::string>& v) {
  return v ? bind(idx, std::string_view(*v)) : bind_null(idx);
}
Statement& Statement::bind_text_or_null(int idx, std::string_view v) {
  return v.empty() ? bind_null(idx) : bind(idx, v);
}
util::Result<int64_t> Statement::step_int() {
  if (auto r = step(); !r) return std::unexpected(r.error());
  return col_int(0);
}
Statement& Statement::bind_null(int idx) {
  sqlite3_bind_null(stmt_, idx);
  return *this;
}

util::Result<bool> Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return fail(ErrorKind::kInternal, std::string("database: ") + sqlite3_errmsg(db_));
}

util::Result<void> Statement::run() {
  while (true) {
    auto r = step();
    if (!r) return std::unexpected(r.error());
    if (!*r) return {};
  }
}

int64_t Statement::col_int(int i) const {
  return sqlite3_column_int64(stmt_, i);
}
double Statement::col_double(int i) const {
  return sqlite3_column_double(stmt_, i);
}
std::string Statement::col_text(int i) const {
  auto* p = sqlite3_column_text(stmt_, i);
  return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
}
bool Statement::col_null(int i) const {
  return sqlite3_column_type(stmt_, i) == SQLITE_NULL;
}

util::Result<Database> Database::open(const std::filesystem::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    if (db) sqlite3_close(db);
    return fail(ErrorKind::kBadInput, "cannot open database " + path.string() + ": " + msg);
  }
  sqlite3_busy_timeout(db, 10000);
  Database d(db);
  if (auto r =
          d.exec("PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;");
      !r)
    return std::unexpected(r.error());
  return d;
}

Database::~Database() {
  if (db_) sqlite3_close(db_);
}

util::Result<void> Database::exec(std::string_view sql) {
  char* err = nullptr;
  std::string s(sql);
  if (sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return fail(ErrorKind::kInternal, "database: " + msg);
  }
  return {};
}

util::Result<Statement> Database::prepare(std::string_view sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &s, nullptr) != SQLITE_OK)
    return fail(ErrorKind::kInternal, std::string("database: ") + sqlite3_errmsg(db_));
  return Statement(s, db_);
}

int64_t Database::last_insert_id() const {
  return sqlite3_last_insert_rowid(db_);
}

}  // namespace ok::store
