// A small Parquet writer of the public file format (docs/traces.md, "Parquet"): one data page
// (v1) per column chunk, PLAIN values, definition and repetition levels in the RLE/bit-packed
// hybrid (RLE runs only), no compression, metadata in the Thrift compact protocol
// (parquet_thrift.hpp). Enough for the trace export's tables: booleans, 32/64-bit integers,
// doubles and UTF-8 strings, nullable or not, structs, and lists (the standard three-level LIST
// layout) of primitives or of structs.
//
// Rows are JSON objects: a missing key or a JSON null is a null, which a required field refuses.
// Pure functions apart from the file write; thread-safe.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "util/error.hpp"

namespace ok::traces {

enum class Physical { kBoolean, kInt32, kInt64, kDouble, kString };

// One field of a schema: a primitive column, a struct of fields, or a list of one element field.
struct Field {
  enum class Kind { kPrimitive, kStruct, kList };
  std::string name;
  Kind kind = Kind::kPrimitive;
  Physical type = Physical::kString;  // primitives only
  bool optional = true;
  std::vector<Field> children;  // struct: its fields; list: its element (named "element")

  static Field primitive(std::string name, Physical type, bool optional = true);
  static Field list(std::string name, Field element, bool optional = true);
  static Field structure(std::string name, std::vector<Field> fields, bool optional = true);
};

using Schema = std::vector<Field>;

struct ParquetOptions {
  size_t row_group_rows = 1024;  // rows per row group (one data page per column each)
  std::vector<std::pair<std::string, std::string>> metadata;  // the footer's key_value_metadata
};

// The whole file's bytes. kInternal when a row does not fit the schema (a required field is null,
// a value of the wrong JSON type, a page over 2 GiB), naming the column and the row.
util::Result<std::string> encode_parquet(const Schema& schema,
                                         const std::vector<nlohmann::json>& rows,
                                         const ParquetOptions& options = {});

// encode_parquet, written to `path` (kBadInput when it cannot be written).
util::Result<void> write_parquet(const std::filesystem::path& path, const Schema& schema,
                                 const std::vector<nlohmann::json>& rows,
                                 const ParquetOptions& options = {});

// The schema as JSON, for metadata/schema.json: [{name, type, nullable, (fields | element)}].
nlohmann::json schema_to_json(const Schema& schema);

}  // namespace ok::traces
