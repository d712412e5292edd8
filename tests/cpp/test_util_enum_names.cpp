#include <gtest/gtest.h>

#include "util/enum_names.hpp"

namespace {

enum class Colour { kRed, kGreen, kBlue };

constexpr ok::util::EnumName<Colour> kColours[] = {{Colour::kRed, "red"},
                                                   {Colour::kGreen, "green"}};

TEST(EnumNames, NameAndValueAreTheTableRows) {
  EXPECT_STREQ(ok::util::name_of(kColours, Colour::kGreen, "?"), "green");
  EXPECT_EQ(ok::util::value_of(kColours, "red"), Colour::kRed);
  static_assert(ok::util::value_of(kColours, "green") == Colour::kGreen);
}

TEST(EnumNames, UnlistedValueGetsTheFallbackAndUnknownNameNothing) {
  EXPECT_STREQ(ok::util::name_of(kColours, Colour::kBlue, "?"), "?");
  EXPECT_FALSE(ok::util::value_of(kColours, "blue"));
  EXPECT_FALSE(ok::util::value_of(kColours, ""));
  EXPECT_FALSE(ok::util::value_of(kColours, "Red"));
}

}  // namespace
