#include "traces/parquet.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <fstream>

#include "traces/parquet_thrift.hpp"

namespace ok::traces {

namespace {

using nlohmann::json;
using util::ErrorKind;

// parquet.thrift's enum values.
constexpr int32_t kTypeBoolean = 0, kTypeInt32 = 1, kTypeInt64 = 2, kTypeDouble = 5,
                  kTypeByteArray = 6;
constexpr int32_t kRequired = 0, kOptional = 1, kRepeated = 2;
constexpr int32_t kConvertedUtf8 = 0, kConvertedList = 3;
constexpr int32_t kEncodingPlain = 0, kEncodingRle = 3;
constexpr int32_t kCodecUncompressed = 0, kPageData = 0;

int32_t physical_code(Physical p) {
  switch (p) {
    case Physical::kBoolean:
      return kTypeBoolean;
    case Physical::kInt32:
      return kTypeInt32;
    case Physical::kInt64:
      return kTypeInt64;
    case Physical::kDouble:
      return kTypeDouble;
    case Physical::kString:
      return kTypeByteArray;
  }
  return kTypeByteArray;
}

const char* physical_name(Physical p) {
  switch (p) {
    case Physical::kBoolean:
      return "boolean";
    case Physical::kInt32:
      return "int32";
    case Physical::kInt64:
      return "int64";
    case Physical::kDouble:
      return "double";
    case Physical::kString:
      return "string";
  }
  return "string";
}

// One leaf column: its levels and PLAIN values for the row group being built.
struct Leaf {
  std::vector<std::string> path;
  Physical type = Physical::kString;
  int max_def = 0, max_rep = 0;
  std::vector<uint32_t> defs, reps;
  std::string values;
  std::vector<bool> bools;

  void clear() {
    defs.clear();
    reps.clear();
    values.clear();
    bools.clear();
  }
};

template <typename T>
void append_le(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) std::reverse(b, b + sizeof(T));
  out.append(b, sizeof(T));
}

size_t count_leaves(const Field& f) {
  if (f.kind == Field::Kind::kPrimitive) return 1;
  size_t n = 0;
  for (const auto& c : f.children) n += count_leaves(c);
  return n;
}

// Dremel's shredding of JSON rows into the leaves' levels and values.
class Shredder {
 public:
  explicit Shredder(std::vector<Leaf>& leaves) : leaves_(leaves) {}

  util::Result<void> row(const Schema& schema, const json& r, size_t index) {
    row_ = index;
    cursor_ = 0;
    if (!r.is_object()) return bad("(the row)", "is not a JSON object");
    for (const auto& f : schema) {
      auto it = r.find(f.name);
      if (auto ok = node(f, it == r.end() ? nullptr : &*it, 0, 0, 0); !ok) return ok;
    }
    return {};
  }

 private:
  util::Result<void> bad(const std::string& what, const std::string& why) const {
    return util::fail(ErrorKind::kInternal,
                      fmt::format("parquet: row {}: field {} {}", row_, what, why));
  }

  void nulls(const Field& f, int rep, int def) {
    size_t n = count_leaves(f);
    for (size_t i = 0; i < n; ++i) {
      leaves_[cursor_ + i].reps.push_back(rep);
      leaves_[cursor_ + i].defs.push_back(def);
    }
    cursor_ += n;
  }

  util::Result<void> node(const Field& f, const json* v, int rep, int def, int depth) {
    if (v == nullptr || v->is_null()) {
      if (!f.optional) return bad(f.name, "is required but null");
      nulls(f, rep, def);
      return {};
    }
    if (f.optional) ++def;
    switch (f.kind) {
      case Field::Kind::kPrimitive:
        return value(f, *v, rep, def);
      case Field::Kind::kStruct: {
        if (!v->is_object()) return bad(f.name, "is not a JSON object");
        for (const auto& c : f.children) {
          auto it = v->find(c.name);
          if (auto ok = node(c, it == v->end() ? nullptr : &*it, rep, def, depth); !ok) return ok;
        }
        return {};
      }
      case Field::Kind::kList: {
        if (!v->is_array()) return bad(f.name, "is not a JSON array");
        const Field& element = f.children.front();
        if (v->empty()) {
          nulls(element, rep, def);
          return {};
        }
        size_t start = cursor_;
        for (size_t i = 0; i < v->size(); ++i) {
          cursor_ = start;
          int r = i == 0 ? rep : depth + 1;
          if (auto ok = node(element, &(*v)[i], r, def + 1, depth + 1); !ok) return ok;
        }
        cursor_ = start + count_leaves(element);
        return {};
      }
    }
    return {};
  }

  util::Result<void> value(const Field& f, const json& v, int rep, int def) {
    Leaf& leaf = leaves_[cursor_++];
    leaf.reps.push_back(rep);
    leaf.defs.push_back(def);
    switch (f.type) {
      case Physical::kBoolean:
        if (!v.is_boolean()) return bad(f.name, "is not a boolean");
        leaf.bools.push_back(v.get<bool>());
        return {};
      case Physical::kInt32:
        if (!v.is_number_integer()) return bad(f.name, "is not an integer");
        append_le<int32_t>(leaf.values, v.get<int32_t>());
        return {};
      case Physical::kInt64:
        if (!v.is_number_integer()) return bad(f.name, "is not an integer");
        append_le<int64_t>(leaf.values, v.get<int64_t>());
        return {};
      case Physical::kDouble:
        if (!v.is_number()) return bad(f.name, "is not a number");
        append_le<double>(leaf.values, v.get<double>());
        return {};
      case Physical::kString: {
        if (!v.is_string()) return bad(f.name, "is not a string");
        const auto& s = v.get_ref<const std::string&>();
        if (s.size() > INT32_MAX) return bad(f.name, "is longer than 2 GiB");
        append_le<uint32_t>(leaf.values, static_cast<uint32_t>(s.size()));
        leaf.values.append(s);
        return {};
      }
    }
    return {};
  }

  std::vector<Leaf>& leaves_;
  size_t cursor_ = 0, row_ = 0;
};

// Levels in the RLE/bit-packed hybrid, RLE runs only, prefixed with their byte length.
void append_levels(std::string& out, const std::vector<uint32_t>& levels, int max_level) {
  int width = std::bit_width(static_cast<unsigned>(max_level));
  int bytes = (width + 7) / 8;
  std::string body;
  for (size_t i = 0; i < levels.size();) {
    size_t j = i;
    while (j < levels.size() && levels[j] == levels[i]) ++j;
    uint64_t header = static_cast<uint64_t>(j - i) << 1;
    while (header >= 0x80) {
      body.push_back(static_cast<char>((header & 0x7F) | 0x80));
      header >>= 7;
    }
    body.push_back(static_cast<char>(header));
    for (int b = 0; b < bytes; ++b)
      body.push_back(static_cast<char>((levels[i] >> (8 * b)) & 0xFF));
    i = j;
  }
  append_le<uint32_t>(out, static_cast<uint32_t>(body.size()));
  out += body;
}

// One column chunk's single data page, header included.
struct Chunk {
  std::string bytes;
  int64_t num_values = 0;
};

util::Result<Chunk> encode_page(const Leaf& leaf) {
  std::string body;
  if (leaf.max_rep > 0) append_levels(body, leaf.reps, leaf.max_rep);
  if (leaf.max_def > 0) append_levels(body, leaf.defs, leaf.max_def);
  if (leaf.type == Physical::kBoolean) {
    std::string bits((leaf.bools.size() + 7) / 8, '\0');
    for (size_t i = 0; i < leaf.bools.size(); ++i)
      if (leaf.bools[i]) bits[i / 8] = static_cast<char>(bits[i / 8] | (1 << (i % 8)));
    body += bits;
  } else {
    body += leaf.values;
  }
  if (body.size() > INT32_MAX)
    return util::fail(ErrorKind::kInternal,
                      "parquet: column " + leaf.path.back() + " has a page over 2 GiB");
  Chunk c;
  c.num_values = static_cast<int64_t>(leaf.defs.size());
  CompactWriter h;
  h.field_i32(1, kPageData);
  h.field_i32(2, static_cast<int32_t>(body.size()));
  h.field_i32(3, static_cast<int32_t>(body.size()));
  h.begin_struct(5);  // DataPageHeader
  h.field_i32(1, static_cast<int32_t>(c.num_values));
  h.field_i32(2, kEncodingPlain);
  h.field_i32(3, kEncodingRle);
  h.field_i32(4, kEncodingRle);
  h.end_struct();
  h.end_message();
  c.bytes = h.bytes() + body;
  return c;
}

// The schema's elements in depth-first order, and its leaves with their levels.
void flatten(const Field& f, std::vector<std::string> path, int def, int rep, CompactWriter& w,
             std::vector<Leaf>& leaves) {
  path.push_back(f.name);
  if (f.optional) ++def;
  w.begin_list_struct();
  if (f.kind == Field::Kind::kPrimitive) w.field_i32(1, physical_code(f.type));
  w.field_i32(3, f.optional ? kOptional : kRequired);
  w.field_string(4, f.name);
  if (f.kind != Field::Kind::kPrimitive)
    w.field_i32(5, static_cast<int32_t>(f.kind == Field::Kind::kList ? 1 : f.children.size()));
  if (f.kind == Field::Kind::kPrimitive && f.type == Physical::kString)
    w.field_i32(6, kConvertedUtf8);
  if (f.kind == Field::Kind::kList) w.field_i32(6, kConvertedList);
  w.end_struct();
  if (f.kind == Field::Kind::kPrimitive) {
    Leaf leaf;
    leaf.path = path;
    leaf.type = f.type;
    leaf.max_def = def;
    leaf.max_rep = rep;
    leaves.push_back(std::move(leaf));
  } else if (f.kind == Field::Kind::kStruct) {
    for (const auto& c : f.children) flatten(c, path, def, rep, w, leaves);
  } else {
    // The repeated group between a list and its element.
    w.begin_list_struct();
    w.field_i32(3, kRepeated);
    w.field_string(4, "list");
    w.field_i32(5, 1);
    w.end_struct();
    path.push_back("list");
    flatten(f.children.front(), path, def + 1, rep + 1, w, leaves);
  }
}

size_t count_elements(const Field& f) {
  size_t n = 1 + (f.kind == Field::Kind::kList ? 1 : 0);
  for (const auto& c : f.children) n += count_elements(c);
  return n;
}

}  // namespace

Field Field::primitive(std::string name, Physical type, bool optional) {
  Field f;
  f.name = std::move(name);
  f.type = type;
  f.optional = optional;
  return f;
}

Field Field::list(std::string name, Field element, bool optional) {
  Field f;
  f.name = std::move(name);
  f.kind = Kind::kList;
  f.optional = optional;
  element.name = "element";
  f.children.push_back(std::move(element));
  return f;
}

Field Field::structure(std::string name, std::vector<Field> fields, bool optional) {
  Field f;
  f.name = std::move(name);
  f.kind = Kind::kStruct;
  f.optional = optional;
  f.children = std::move(fields);
  return f;
}

namespace {

struct ChunkPlace {
  int64_t offset = 0, size = 0, num_values = 0;
};

void write_footer(CompactWriter& m, const Schema& schema, const std::vector<Leaf>& leaves,
                  const std::vector<std::vector<ChunkPlace>>& groups,
                  const std::vector<int64_t>& group_rows, size_t num_rows,
                  const ParquetOptions& options) {
  m.field_i32(1, 1);
  size_t elements = 1;
  for (const auto& f : schema) elements += count_elements(f);
  m.begin_list(2, TType::kStruct, elements);
  m.begin_list_struct();
  m.field_string(4, "schema");
  m.field_i32(5, static_cast<int32_t>(schema.size()));
  m.end_struct();
  std::vector<Leaf> unused;
  for (const auto& f : schema) flatten(f, {}, 0, 0, m, unused);
  m.field_i64(3, static_cast<int64_t>(num_rows));
  m.begin_list(4, TType::kStruct, groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    m.begin_list_struct();
    m.begin_list(1, TType::kStruct, leaves.size());
    int64_t total = 0;
    for (size_t c = 0; c < leaves.size(); ++c) {
      const ChunkPlace& p = groups[g][c];
      total += p.size;
      m.begin_list_struct();
      m.field_i64(2, p.offset);
      m.begin_struct(3);  // ColumnMetaData
      m.field_i32(1, physical_code(leaves[c].type));
      m.begin_list(2, TType::kI32, 2);
      m.elem_i32(kEncodingPlain);
      m.elem_i32(kEncodingRle);
      m.begin_list(3, TType::kBinary, leaves[c].path.size());
      for (const auto& part : leaves[c].path) m.elem_string(part);
      m.field_i32(4, kCodecUncompressed);
      m.field_i64(5, p.num_values);
      m.field_i64(6, p.size);
      m.field_i64(7, p.size);
      m.field_i64(9, p.offset);
      m.end_struct();
      m.end_struct();
    }
    m.field_i64(2, total);
    m.field_i64(3, group_rows[g]);
    m.end_struct();
  }
  if (!options.metadata.empty()) {
    m.begin_list(5, TType::kStruct, options.metadata.size());
    for (const auto& [k, v] : options.metadata) {
      m.begin_list_struct();
      m.field_string(1, k);
      m.field_string(2, v);
      m.end_struct();
    }
  }
  m.field_string(6, "openkernel traces (parquet writer 1)");
  m.end_message();
}

}  // namespace

util::Result<std::string> encode_parquet(const Schema& schema, const std::vector<json>& rows,
                                         const ParquetOptions& options) {
  std::vector<Leaf> leaves;
  {
    CompactWriter scratch;
    for (const auto& f : schema) flatten(f, {}, 0, 0, scratch, leaves);
  }
  std::string out = "PAR1";
  std::vector<std::vector<ChunkPlace>> groups;
  std::vector<int64_t> group_rows;
  size_t per_group = std::max<size_t>(options.row_group_rows, 1);
  for (size_t start = 0; start < rows.size(); start += per_group) {
    size_t end = std::min(rows.size(), start + per_group);
    for (auto& l : leaves) l.clear();
    Shredder shred(leaves);
    for (size_t i = start; i < end; ++i)
      if (auto ok = shred.row(schema, rows[i], i); !ok) return std::unexpected(ok.error());
    std::vector<ChunkPlace> places;
    for (const auto& leaf : leaves) {
      auto chunk = encode_page(leaf);
      if (!chunk) return std::unexpected(chunk.error());
      places.push_back({static_cast<int64_t>(out.size()), static_cast<int64_t>(chunk->bytes.size()),
                        chunk->num_values});
      out += chunk->bytes;
    }
    groups.push_back(std::move(places));
    group_rows.push_back(static_cast<int64_t>(end - start));
  }
  CompactWriter footer;
  write_footer(footer, schema, leaves, groups, group_rows, rows.size(), options);
  out += footer.bytes();
  append_le<uint32_t>(out, static_cast<uint32_t>(footer.bytes().size()));
  out += "PAR1";
  return out;
}

util::Result<void> write_parquet(const std::filesystem::path& path, const Schema& schema,
                                 const std::vector<json>& rows, const ParquetOptions& options) {
  auto bytes = encode_parquet(schema, rows, options);
  if (!bytes) return std::unexpected(bytes.error());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  f.close();
  if (!f)
    return util::fail(ErrorKind::kBadInput,
                      "cannot write " + path.string() + ": " + std::strerror(errno));
  return {};
}

json schema_to_json(const Schema& schema) {
  json out = json::array();
  for (const auto& f : schema) {
    json j = {{"name", f.name}, {"nullable", f.optional}};
    if (f.kind == Field::Kind::kPrimitive) {
      j["type"] = physical_name(f.type);
    } else if (f.kind == Field::Kind::kStruct) {
      j["type"] = "struct";
      j["fields"] = schema_to_json(f.children);
    } else {
      j["type"] = "list";
      j["element"] = schema_to_json(f.children).at(0);
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace ok::traces
