// The compare view: two schedules' paired delta and b's verdict against a.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_COMPARE_H_
#define PRISM_CLI_VIEWS_COMPARE_H_

#include <ostream>
#include <string>

#include "cli/output.h"
#include "prism/v1/prism.pb.h"

namespace prism::cli {

// CompareTable: one row, a and b, their common seeds, the paired delta
// b - a with its 95% CI half-width, b's verdict against a and its p-value.
Table CompareTable(const v1::CompareResponse& response);
// CompareMethod is the line that states how the compare verdict is reached.
std::string CompareMethod();
// PrintCompare prints a Compare response: in text the table, a note on
// missing values and the method; in CSV the table; in JSON the response.
void PrintCompare(const v1::CompareResponse& response, Format format,
                  std::ostream& out);

}  // namespace prism::cli

#endif  // PRISM_CLI_VIEWS_COMPARE_H_
