// base/csv.h: RFC 4180 quoting, line ends, and one clear message per malformed file.
#include "base/csv.h"

#include <gtest/gtest.h>

namespace megascale {
namespace {

TEST(Csv, QuotedFieldsKeepCommasQuotesAndNewlines) {
  Result<std::vector<CsvRow>> rows =
      ParseCsv("a,b,c\r\n1,\"x, y\",\"say \"\"hi\"\"\"\n2,\"two\nlines\",\n\n", "t.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].at("a"), "1");
  EXPECT_EQ((*rows)[0].at("b"), "x, y");
  EXPECT_EQ((*rows)[0].at("c"), "say \"hi\"");
  EXPECT_EQ((*rows)[1].at("b"), "two\nlines");
  EXPECT_EQ((*rows)[1].at("c"), "");
}

TEST(Csv, BlankLinesBetweenRowsAreSkipped) {
  Result<std::vector<CsvRow>> rows = ParseCsv("a,b\n1,2\n\n3,4\n", "t.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[1].at("a"), "3");
}

TEST(Csv, AWrongFieldCountNamesTheFileAndTheLine) {
  // The quoted newline in row 1 makes the short row start on line 4, not 3.
  Result<std::vector<CsvRow>> rows = ParseCsv("a,b\n\"1\n1\",2\n3\n", "t.csv");
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().message(), "t.csv line 4: 1 fields: the header line has 2");
}

TEST(Csv, AnUnterminatedQuoteAndAnEmptyFileAreErrors) {
  Result<std::vector<CsvRow>> open = ParseCsv("a,b\n1,\"2\n", "t.csv");
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().message(), "t.csv line 2: unterminated quoted field");
  Result<std::vector<CsvRow>> empty = ParseCsv("\n", "t.csv");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no header"), std::string::npos);
}

TEST(Csv, AMissingFileIsNotFoundNamingThePath) {
  Result<std::vector<CsvRow>> rows = ReadCsvFile(::testing::TempDir() + "/no-such.csv");
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().code(), Status::Code::kNotFound);
  EXPECT_NE(rows.status().message().find("no-such.csv"), std::string::npos);
}

}  // namespace
}  // namespace megascale
