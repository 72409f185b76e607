#include "cli/output.h"

#include <sstream>
#include <string>

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

}  // namespace
}  // namespace prism::cli
