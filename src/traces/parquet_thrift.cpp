#include "traces/parquet_thrift.hpp"

namespace ok::traces {

void CompactWriter::varint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void CompactWriter::field_header(int16_t id, TType t) {
  int16_t delta = static_cast<int16_t>(id - last_ids_.back());
  if (delta > 0 && delta <= 15) {
    out_.push_back(static_cast<char>((delta << 4) | static_cast<uint8_t>(t)));
  } else {
    out_.push_back(static_cast<char>(t));
    zigzag(id);
  }
  last_ids_.back() = id;
}

void CompactWriter::field_i32(int16_t id, int32_t v) {
  field_header(id, TType::kI32);
  zigzag(v);
}

void CompactWriter::field_i64(int16_t id, int64_t v) {
  field_header(id, TType::kI64);
  zigzag(v);
}

void CompactWriter::field_bool(int16_t id, bool v) {
  field_header(id, v ? TType::kBoolTrue : TType::kBoolFalse);
}

void CompactWriter::field_string(int16_t id, std::string_view v) {
  field_header(id, TType::kBinary);
  varint(v.size());
  out_.append(v);
}

void CompactWriter::begin_struct(int16_t id) {
  field_header(id, TType::kStruct);
  last_ids_.push_back(0);
}

void CompactWriter::end_struct() {
  out_.push_back(0);
  last_ids_.pop_back();
}

void CompactWriter::begin_list(int16_t id, TType elem, size_t size) {
  field_header(id, TType::kList);
  if (size < 15) {
    out_.push_back(static_cast<char>((size << 4) | static_cast<uint8_t>(elem)));
  } else {
    out_.push_back(static_cast<char>(0xF0 | static_cast<uint8_t>(elem)));
    varint(size);
  }
}

void CompactWriter::elem_i32(int32_t v) {
  zigzag(v);
}

void CompactWriter::elem_string(std::string_view v) {
  varint(v.size());
  out_.append(v);
}

void CompactWriter::begin_list_struct() {
  last_ids_.push_back(0);
}

}  // namespace ok::traces
