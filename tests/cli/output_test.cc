#include "cli/output.h"

#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::cli {
namespace {

using ::testing::HasSubstr;

std::string Printed(const Table& table, Format format) {
  std::ostringstream out;
  table.Print(out, format);
  return out.str();
}

Table WithMissingValues() {
  Table t({"schedule", "val_ci95", "speedup"});
  t.AddRow({"4x6", "", "1.00"});
  t.AddRow({"2x3,4x3", "0.0123", ""});
  return t;
}

TEST(DurationTest, UnitsParseToSecondsAndAnythingElseIsRefused) {
  EXPECT_EQ(*ParseDurationSeconds("45s"), 45);
  EXPECT_EQ(*ParseDurationSeconds("90m"), 5400);
  EXPECT_EQ(*ParseDurationSeconds("12h"), 43200);
  EXPECT_EQ(*ParseDurationSeconds("30d"), 2592000);
  EXPECT_EQ(*ParseDurationSeconds("3600"), 3600);
  EXPECT_EQ(*ParseDurationSeconds("0"), 0);
  for (const char* bad :
       {"", "d", "-1d", "1.5h", "12x", "h12", "1 h", "99999999999d"}) {
    absl::StatusOr<int64_t> parsed = ParseDurationSeconds(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << bad;
  }
  EXPECT_THAT(ParseDurationSeconds("soon").status().message(),
              HasSubstr("'soon'"));
  EXPECT_EQ(FormatUtc(1'700'000'000'000), "2023-11-14T22:13:20Z");
}

TEST(PrintableTest, EscapesControlCharactersAndKeepsUtf8) {
  EXPECT_EQ(Printable("plain name-1.x"), "plain name-1.x");
  EXPECT_EQ(Printable("Jos\xc3\xa9 \xe2\x9c\x93"), "Jos\xc3\xa9 \xe2\x9c\x93");
  // ESC [ 2 J (clear screen), a bell, a newline, DEL.
  EXPECT_EQ(Printable("a\x1b[2Jb\a\n\x7f"), "a\\x1b[2Jb\\x07\\x0a\\x7f");
  // U+009B, the one-character CSI, and bytes that are not UTF-8.
  EXPECT_EQ(Printable("x\xc2\x9b"
                      "31m"),
            "x\\xc2\\x9b31m");
  EXPECT_EQ(Printable("\xff\xc3"), "\\xff\\xc3");
}

TEST(TableTest, TextAndCsvEscapeOtherUsersControlCharacters) {
  Table t({"name", "owner"});
  t.AddRow({"evil\x1b]0;pwned\x07", "bob"});
  const std::string text = Printed(t, Format::kText);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_THAT(text, HasSubstr("evil\\x1b]0;pwned\\x07"));
  EXPECT_EQ(Printed(t, Format::kCsv).find('\x1b'), std::string::npos);
  // JSON escapes it its own way.
  EXPECT_THAT(Printed(t, Format::kJson), HasSubstr("\\u001b"));
}

TEST(TableTest, TextShowsADashForAMissingValue) {
  EXPECT_EQ(Printed(WithMissingValues(), Format::kText),
            "schedule  val_ci95  speedup\n"
            "4x6              -     1.00\n"
            "2x3,4x3     0.0123        -\n");
}

TEST(TableTest, TextAlignsTextLeftAndAColumnOfDashesRight) {
  Table t({"schedule", "val_ci95"});
  t.AddRow({"4x6", ""});
  t.AddRow({"2x3,4x3", ""});
  EXPECT_EQ(Printed(t, Format::kText),
            "schedule  val_ci95\n"
            "4x6              -\n"
            "2x3,4x3          -\n");
}

TEST(TableTest, JsonWritesNullForAMissingValue) {
  const std::string json = Printed(WithMissingValues(), Format::kJson);
  EXPECT_THAT(json, HasSubstr("\"val_ci95\": null, \"speedup\": 1.00"));
  EXPECT_THAT(json, HasSubstr("\"val_ci95\": 0.0123, \"speedup\": null"));
}

TEST(TableTest, CsvLeavesAMissingValueEmpty) {
  EXPECT_EQ(Printed(WithMissingValues(), Format::kCsv),
            "schedule,val_ci95,speedup\n"
            "4x6,,1.00\n"
            "\"2x3,4x3\",0.0123,\n");
}

TEST(TableTest, ShortRowsArePaddedWithMissingValues) {
  Table t({"id", "worker"});
  t.AddRow({"7"});
  EXPECT_EQ(Printed(t, Format::kText), "id  worker\n 7       -\n");
  EXPECT_THAT(Printed(t, Format::kJson), HasSubstr("\"worker\": null"));
}

TEST(TableTest, AlignsColumnsByCharactersNotBytes) {
  Table t({"delta", "ci", "verdict"});
  t.AddRow({"-0.0142", "±0.0130", "better"});
  t.AddRow({"+0.0008", "", "needs seeds"});
  EXPECT_EQ(Printed(t, Format::kText),
            "  delta  ci       verdict\n"
            "-0.0142  ±0.0130  better\n"
            "+0.0008  -        needs seeds\n");
}

TEST(TableTest, TableOfPrintsADeclaredColumnPerNameAndACellPerRow) {
  constexpr Column<int> kColumns[] = {
      {"n", [](const int& n) { return std::to_string(n); }},
      {"square", [](const int& n) { return std::to_string(n * n); }},
      {"odd", [](const int& n) -> std::string { return n % 2 ? "yes" : ""; }},
  };
  const std::vector<int> rows = {1, 2, 3};
  EXPECT_EQ(Printed(TableOf<int>(kColumns, rows), Format::kCsv),
            "n,square,odd\n1,1,yes\n2,4,\n3,9,yes\n");
  EXPECT_EQ(Printed(TableOf<int>(kColumns, std::vector<int>()), Format::kCsv),
            "n,square,odd\n");
}

TEST(CutToWidthTest, KeepsWhatFitsAndCutsWholeCharacters) {
  EXPECT_EQ(CutToWidth("prism run", 9), "prism run");
  EXPECT_EQ(CutToWidth("prism run: tiny", 10), "prism r...");
  // "±" is two bytes and one column: it is kept or dropped whole.
  EXPECT_EQ(CutToWidth("a±b±c±d", 6), "a±b...");
  EXPECT_EQ(DisplayWidth(CutToWidth("±±±±±±±±", 5)), 5u);
}

TEST(WrapTextTest, BreaksAtSpacesAndIndentsContinuations) {
  EXPECT_EQ(WrapText("aaa bbb ccc ddd", 9), "aaa bbb\n  ccc ddd");
  // Existing line breaks and leading spaces are kept; a long word stays whole.
  EXPECT_EQ(WrapText("x\n  indented line", 10), "x\n  indented\n  line");
  EXPECT_EQ(WrapText("averyveryverylongword next", 8),
            "averyveryverylongword\n  next");
  EXPECT_EQ(WrapText("±± ±±", 5), "±± ±±");  // 5 columns, 9 bytes
  EXPECT_EQ(DisplayWidth("±0.0130"), 7u);
}

}  // namespace
}  // namespace prism::cli
