// The Thrift compact protocol, write side only: the encoding of Parquet's metadata structures
// (FileMetaData, RowGroup, ColumnChunk, ColumnMetaData, PageHeader) as the public Parquet format
// defines them. Fields are written in increasing id order within a struct, as the compact
// protocol's delta field headers require; the caller opens and closes nested structs in order.
//
// CompactWriter appends to a byte string it owns; not thread-safe (one writer per thread).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ok::traces {

// Compact protocol type codes (the element types of lists, and field headers).
enum class TType : uint8_t {
  kBoolTrue = 1,
  kBoolFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kStruct = 12,
};

class CompactWriter {
 public:
  void field_i32(int16_t id, int32_t v);
  void field_i64(int16_t id, int64_t v);
  void field_bool(int16_t id, bool v);
  void field_string(int16_t id, std::string_view v);
  // A nested struct: write its fields, then end_struct().
  void begin_struct(int16_t id);
  void end_struct();
  // A list field of `size` elements of `elem`; then write each element with the element
  // writers below (structs: begin_list_struct / end_struct).
  void begin_list(int16_t id, TType elem, size_t size);
  void elem_i32(int32_t v);
  void elem_string(std::string_view v);
  void begin_list_struct();
  // Closes the outermost struct (the message itself).
  void end_message() { out_.push_back(0); }

  const std::string& bytes() const { return out_; }

 private:
  void field_header(int16_t id, TType t);
  void varint(uint64_t v);
  void zigzag(int64_t v) {
    varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }

  std::string out_;
  std::vector<int16_t> last_ids_{0};  // the last field id of each open struct
};

}  // namespace ok::traces
