// The names of an enum's values, written once per enum as a table of {value, name} rows, so that
// naming a value and parsing a name back cannot drift apart. Lookups are linear (the tables are a
// handful of rows). Header-only and stateless: safe from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace ok::util {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

// The name `table` gives `value`, or `fallback` when the table does not list it.
template <class E, std::size_t N>
constexpr const char* name_of(const EnumName<E> (&table)[N], E value, const char* fallback) {
  for (const auto& row : table)
    if (row.value == value) return row.name;
  return fallback;
}

// The value `table` names `name`, or nullopt when no row has that name.
template <class E, std::size_t N>
constexpr std::optional<E> value_of(const EnumName<E> (&table)[N], std::string_view name) {
  for (const auto& row : table)
    if (name == row.name) return row.value;
  return std::nullopt;
}

}  // namespace ok::util
