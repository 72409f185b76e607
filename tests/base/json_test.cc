#include "base/json.h"

#include "gtest/gtest.h"

namespace prism {
namespace {

TEST(JsonStringTest, PlainTextIsOnlyQuoted) {
  EXPECT_EQ(JsonString(""), "\"\"");
  EXPECT_EQ(JsonString("val_loss 2.5"), "\"val_loss 2.5\"");
}

TEST(JsonStringTest, QuotesBackslashesAndControlCharactersAreEscaped) {
  EXPECT_EQ(JsonString("say \"hi\""), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(JsonString("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(JsonString("one\ntwo\tthree"), "\"one\\ntwo\\tthree\"");
  EXPECT_EQ(JsonString(std::string("\x01\x1f\r", 3)),
            "\"\\u0001\\u001f\\u000d\"");
}

TEST(JsonStringTest, Utf8PassesThrough) {
  EXPECT_EQ(JsonString("h\xc3\xa9"), "\"h\xc3\xa9\"");
}

}  // namespace
}  // namespace prism
