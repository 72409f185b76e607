// Output helpers shared by every subcommand: error lines and exit statuses,
// table/JSON/CSV result formats, and a progress display that is a bar on a
// terminal and plain lines otherwise.
//
//   Table t({"rank", "schedule", "val loss"});
//   t.AddRow({"1", "3x3,6x3,12x6", "3.3604"});
//   t.Print(std::cout, Format::kText);   // aligned columns
//
//   Progress p("train", /*total=*/200);
//   p.Update(10, "loss 2.31  4,210 tok/s");
//   p.Finish("done");
//
// Thread-safety: none of these are thread-safe; use one per thread.
#ifndef PRISM_CLI_OUTPUT_H_
#define PRISM_CLI_OUTPUT_H_

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace prism::cli {

// ExitStatusFor maps a Status to the process exit status: OK -> 0;
// InvalidArgument, NotFound, OutOfRange, AlreadyExists, FailedPrecondition,
// Unauthenticated and PermissionDenied (the user can fix them) -> 2;
// anything else -> 1.
int ExitStatusFor(const absl::Status& status);

// ReportError prints "prism <command>: <message>" on one line to stderr and
// returns ExitStatusFor(status).
int ReportError(absl::string_view command, const absl::Status& status);

enum class Format { kText, kJson, kCsv };

// ParseFormat accepts "text"/"table", "json" and "csv" (csv only when
// allow_csv). InvalidArgument naming the accepted values otherwise.
absl::StatusOr<Format> ParseFormat(absl::string_view text,
                                   bool allow_csv = true);

// Printable returns `text` safe to print on a terminal: ASCII control
// characters (ESC included), the UTF-8 C1 controls and bytes that are not
// UTF-8 become \xNN; other UTF-8 is kept.
// Everything printed that another user wrote (names, hosts, errors) goes
// through it.
std::string Printable(absl::string_view text);

// Table is a result set printed as aligned columns (text), RFC 4180 CSV, or a
// JSON array of objects keyed by column name. Cells that parse as numbers are
// written as JSON numbers, "true"/"false" as booleans. An empty cell is a
// missing value: "-" in text, an empty field in CSV, null in JSON. Text and
// CSV cells are printed through Printable; JSON escapes them itself.
class Table {
 public:
  explicit Table(std::vector<std::string> columns);
  void AddRow(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }
  void Print(std::ostream& out, Format format) const;

 private:
  void PrintRaw(std::ostream& out, Format format) const;

  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Column is one column of a table whose rows are `Row`s: its name and the
// function that renders a row's cell, declared together so that a header
// cannot drift from its cells. A view declares each column once; a column
// set (the default view, --wide, CSV) is a list of them. Widths and
// alignment are the Table's: a column of numbers aligns right.
//
//   constexpr Column<v1::Trial> kTrialColumns[] = {
//       {"id", [](const v1::Trial& t) { return absl::StrCat(t.id()); }},
//       {"schedule", [](const v1::Trial& t) { return t.schedule(); }},
//   };
//   Table table = TableOf<v1::Trial>(kTrialColumns, response.trials());
template <typename Row>
struct Column {
  const char* name;
  std::string (*cell)(const Row& row);
};

// TableOf returns a Table of `columns` with a row per element of `rows`,
// each cell its column's cell of that element.
template <typename Row, typename Rows>
Table TableOf(absl::Span<const Column<Row>> columns, const Rows& rows) {
  std::vector<std::string> names;
  names.reserve(columns.size());
  for (const Column<Row>& column : columns) names.push_back(column.name);
  Table table(std::move(names));
  for (const Row& row : rows) {
    std::vector<std::string> cells;
    cells.reserve(columns.size());
    for (const Column<Row>& column : columns) cells.push_back(column.cell(row));
    table.AddRow(std::move(cells));
  }
  return table;
}

// IsTerminal is true when the stream's file descriptor is a TTY.
bool IsTerminal(int fd);

// Progress shows the progress of long work on stderr: a redrawn bar with
// percentage, rate and ETA on a terminal; otherwise a plain line at most every
// `plain_interval` (and at the end), so logs stay readable.
class Progress {
 public:
  Progress(std::string label, int64_t total,
           std::chrono::seconds plain_interval = std::chrono::seconds(10));
  ~Progress();
  // Update records `done` units complete, with a free-form suffix
  // ("loss 2.31").
  void Update(int64_t done, absl::string_view suffix = "");
  // Finish draws the final state and ends the line.
  void Finish(absl::string_view suffix = "");

 private:
  void Draw(absl::string_view suffix, bool final);

  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  bool tty_;
  bool finished_ = false;
  std::chrono::seconds plain_interval_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// DisplayWidth is the number of terminal columns `text` takes: its UTF-8
// code points (every character this tool prints is one column wide).
size_t DisplayWidth(absl::string_view text);

// CutToWidth returns `text` when it takes at most `width` columns, else its
// first width - 3 characters (whole UTF-8 sequences) and "...".
std::string CutToWidth(absl::string_view text, size_t width);

// WrapText breaks each line of `text` at spaces so that no line is longer
// than `width` bytes (a word longer than that stays whole); continuation
// lines are indented by `indent` spaces. Existing line breaks are kept.
std::string WrapText(absl::string_view text, size_t width = 100,
                     size_t indent = 2);

// FormatDuration renders seconds as "1:05:03", "4:07" or "12s".
std::string FormatDuration(double seconds);

// FormatUtc renders a Unix time in ms as "2026-12-01T20:14:03Z".
std::string FormatUtc(int64_t unix_ms);

// ParseDurationSeconds parses "45s", "90m", "12h", "30d" or bare seconds
// ("3600"); InvalidArgument for anything else (negative, fractional, over
// 100 years).
absl::StatusOr<int64_t> ParseDurationSeconds(absl::string_view text);

}  // namespace prism::cli

#endif  // PRISM_CLI_OUTPUT_H_
