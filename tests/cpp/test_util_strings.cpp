#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/strings.hpp"

using ok::util::parse_id_ranges;
using ok::util::split;
using ok::util::starts_with;
using ok::util::trim;
using Strings = std::vector<std::string>;
using Ints = std::vector<int>;

TEST(Split, SplitsOnEverySeparator) {
  EXPECT_EQ(split("a:b:c", ':'), (Strings{"a", "b", "c"}));
}

TEST(Split, KeepsEmptyFields) {
  EXPECT_EQ(split("a::b", ':'), (Strings{"a", "", "b"}));
  EXPECT_EQ(split(":a:", ':'), (Strings{"", "a", ""}));
}

TEST(Split, EmptyInputIsOneEmptyField) {
  EXPECT_EQ(split("", ','), (Strings{""}));
}

TEST(Split, NoSeparatorIsWholeString) {
  EXPECT_EQ(split("abc", ','), (Strings{"abc"}));
}

TEST(Trim, RemovesSpacesTabsAndNewlinesAtBothEnds) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim("\tx"), "x");
  EXPECT_EQ(trim("x"), "x");
}

TEST(Trim, AllWhitespaceBecomesEmpty) {
  EXPECT_EQ(trim(" \t\r\n "), "");
  EXPECT_EQ(trim(""), "");
}

TEST(StartsWith, MatchesPrefixOnly) {
  EXPECT_TRUE(starts_with("openkernel", "open"));
  EXPECT_TRUE(starts_with("open", ""));
  EXPECT_FALSE(starts_with("open", "openkernel"));
  EXPECT_FALSE(starts_with("kernel", "open"));
}

namespace {
struct Parsed {
  bool ok;
  Ints ids;
  std::string error;
};
Parsed parse(std::string_view spec) {
  Parsed p;
  p.ok = parse_id_ranges(spec, p.ids, p.error);
  return p;
}
}  // namespace

TEST(ParseIdRanges, SingleNumber) {
  auto p = parse("7");
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.ids, (Ints{7}));
}

TEST(ParseIdRanges, RangesAndNumbersSortedWithoutDuplicates) {
  auto p = parse("35,1-4,3,2-3");
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.ids, (Ints{1, 2, 3, 4, 35}));
}

TEST(ParseIdRanges, RangeOfOneElement) {
  auto p = parse("5-5");
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.ids, (Ints{5}));
}

TEST(ParseIdRanges, AllowsSpacesAroundParts) {
  auto p = parse(" 3 , 1 - 2 ");
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.ids, (Ints{1, 2, 3}));
}

TEST(ParseIdRanges, ClearsPreviousContentOfOut) {
  Ints ids{99, 100};
  std::string error;
  ASSERT_TRUE(parse_id_ranges("1", ids, error));
  EXPECT_EQ(ids, (Ints{1}));
}

TEST(ParseIdRanges, RejectsNonNumbersNamingThePart) {
  auto p = parse("1,abc");
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.error.find("'abc'"), std::string::npos) << p.error;
  EXPECT_NE(p.error.find("not a problem number"), std::string::npos) << p.error;
}

TEST(ParseIdRanges, RejectsEmptySpecAndEmptyParts) {
  EXPECT_FALSE(parse("").ok);
  EXPECT_FALSE(parse("1,,2").ok);
  EXPECT_FALSE(parse("1,").ok);
}

TEST(ParseIdRanges, RejectsTrailingGarbageInNumber) {
  EXPECT_FALSE(parse("12x").ok);
  EXPECT_FALSE(parse("1.5").ok);
}

TEST(ParseIdRanges, RejectsMalformedRangesNamingThePart) {
  for (const char* spec : {"5-3", "1-", "-3", "1--2", "a-b", "1-2-3", "-"}) {
    auto p = parse(spec);
    EXPECT_FALSE(p.ok) << spec;
    EXPECT_NE(p.error.find("range like 1-20"), std::string::npos) << spec << ": " << p.error;
    EXPECT_NE(p.error.find(std::string("'") + spec + "'"), std::string::npos) << p.error;
  }
}

TEST(ParseIdRanges, RejectsNumbersTooLargeForInt) {
  EXPECT_FALSE(parse("99999999999").ok);
}

// strings.hpp promises an empty list on failure.
TEST(ParseIdRanges, LeavesOutEmptyOnFailure) {
  auto p = parse("1,2,x");
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(p.ids.empty());
}

TEST(ParseIdRanges, RejectsHugeAndOverflowingRanges) {
  std::vector<int> out;
  std::string error;
  EXPECT_FALSE(ok::util::parse_id_ranges("1-300000000", out, error));
  EXPECT_NE(error.find("spans more than"), std::string::npos);
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(ok::util::parse_id_ranges("2147483645-2147483647", out, error)) << error;
  EXPECT_EQ(out.size(), 3u);
}

TEST(IsUtf8, AcceptsWellFormedText) {
  EXPECT_TRUE(ok::util::is_utf8(""));
  EXPECT_TRUE(ok::util::is_utf8("/tmp/plain/path.py"));
  EXPECT_TRUE(ok::util::is_utf8("/tmp/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80.py"));  // é € 😀
  EXPECT_TRUE(ok::util::is_utf8("\xf4\x8f\xbf\xbf"));                                   // U+10FFFF
}

TEST(IsUtf8, RefusesMalformedBytes) {
  EXPECT_FALSE(ok::util::is_utf8("/tmp/bad\xff.py"));   // not a lead byte
  EXPECT_FALSE(ok::util::is_utf8("caf\xe9"));           // Latin-1
  EXPECT_FALSE(ok::util::is_utf8("\xc3"));              // truncated at the end
  EXPECT_FALSE(ok::util::is_utf8("\xe2\x82"));          // truncated sequence
  EXPECT_FALSE(ok::util::is_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(ok::util::is_utf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(ok::util::is_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(ok::util::is_utf8("\xe2\x28\xa1"));      // bad continuation
}

TEST(UtilStrings, ParseHeaderLine) {
  std::string name, value;
  EXPECT_TRUE(ok::util::parse_header_line("X-Repo-Commit:  abc \r\n", name, value));
  EXPECT_EQ(name, "x-repo-commit");
  EXPECT_EQ(value, "abc");
  EXPECT_TRUE(ok::util::parse_header_line("Link: <http://h/a?b=c>; rel=\"next\"\r\n", name, value));
  EXPECT_EQ(value, "<http://h/a?b=c>; rel=\"next\"");
  EXPECT_TRUE(ok::util::parse_header_line("Empty:\r\n", name, value));
  EXPECT_EQ(value, "");
  EXPECT_FALSE(ok::util::parse_header_line("\r\n", name, value));
}
