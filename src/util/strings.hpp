// Small string helpers with no project-specific knowledge.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ok::util {

std::vector<std::string> split(std::string_view s, char sep);
std::string trim(std::string_view s);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
bool starts_with(std::string_view s, std::string_view prefix);
// One "Name: value" line of an HTTP header: the name lower-cased, the value without surrounding
// white space or line end; false for a line without a colon (a status line, the blank end).
bool parse_header_line(std::string_view line, std::string& name, std::string& value);
// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
// The worker protocol is UTF-8 JSON: a path that is not cannot be sent as text.
bool is_utf8(std::string_view s);
// Parses "1-20,35" into a sorted list without duplicates; nullopt-like empty + error text on
// failure.
// A sortable, unique-enough id: PREFIX<UTC yyyymmdd-hhmmss>-<4 random hex>.
std::string time_id(std::string_view prefix);
bool parse_id_ranges(std::string_view spec, std::vector<int>& out, std::string& error);

}  // namespace ok::util
