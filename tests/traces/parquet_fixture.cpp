// Writes a Parquet file through traces::write_parquet and, beside it, the same rows as JSON lines,
// for tests/traces/parquet.test.mjs to read back with an independent reader (hyparquet). The rows
// cover what the trace export needs: nulls in every kind of column, strings over 64 KiB, empty
// and null lists, lists of structs, nested structs and several row groups.
// Usage: parquet_fixture OUT.parquet OUT.jsonl
#include <fmt/core.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "traces/parquet.hpp"

using nlohmann::json;
using ok::traces::Field;
using ok::traces::Physical;

int main(int argc, char** argv) {
  if (argc != 3) {
    fmt::print(stderr, "usage: parquet_fixture OUT.parquet OUT.jsonl\n");
    return 2;
  }
  ok::traces::Schema schema = {
      Field::primitive("id", Physical::kInt32, false),
      Field::primitive("name", Physical::kString),
      Field::primitive("big", Physical::kInt64),
      Field::primitive("score", Physical::kDouble),
      Field::primitive("ok", Physical::kBoolean),
      Field::list("tags", Field::primitive("", Physical::kString, false)),
      Field::list("messages",
                  Field::structure("",
                                   {Field::primitive("role", Physical::kString, false),
                                    Field::primitive("content", Physical::kString, false)},
                                   false)),
      Field::structure("info", {Field::primitive("a", Physical::kInt32),
                                Field::primitive("b", Physical::kString)}),
  };
  std::vector<json> rows;
  for (int i = 0; i < 2500; ++i) {
    json r = {{"id", i}};
    if (i % 3 != 0) r["name"] = fmt::format("row {} \u00e9\u4e2d", i);
    if (i % 5 != 0) r["big"] = int64_t{1} << (i % 62);
    if (i % 7 != 0) r["score"] = i * 0.5 - 100.25;
    if (i % 4 != 0) r["ok"] = i % 2 == 0;
    if (i % 6 == 1)
      r["tags"] = json::array();
    else if (i % 6 != 0)
      r["tags"] = json::array({"t" + std::to_string(i), "u"});
    if (i % 10 == 2) {
      r["messages"] = json::array();
    } else if (i % 10 != 0) {
      json m = json::array();
      for (int k = 0; k < i % 4 + 1; ++k)
        m.push_back(
            {{"role", k % 2 ? "assistant" : "user"}, {"content", fmt::format("msg {} {}", i, k)}});
      if (i == 9) m.push_back({{"role", "user"}, {"content", std::string(200000, 'x') + "end"}});
      r["messages"] = m;
    }
    if (i % 8 == 3)
      r["info"] = {{"a", nullptr}, {"b", "only b"}};
    else if (i % 8 != 0)
      r["info"] = {{"a", i}, {"b", nullptr}};
    if (i == 5) r["name"] = std::string(70000, 'n') + "tail";
    rows.push_back(std::move(r));
  }
  auto ok = ok::traces::write_parquet(argv[1], schema, rows,
                                      {.row_group_rows = 1024, .metadata = {{"fixture", "1"}}});
  if (!ok) {
    fmt::print(stderr, "{}\n", ok.error().message);
    return 1;
  }
  std::ofstream jl(argv[2]);
  for (const auto& r : rows) jl << r.dump() << "\n";
  return jl ? 0 : 1;
}
