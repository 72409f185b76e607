#include "cli/output.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "base/json.h"
#include "fmt/format.h"

namespace prism::cli {

int ExitStatusFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      return 2;
    default:
      return 1;
  }
}

int ReportError(absl::string_view command, const absl::Status& status) {
  std::string message(status.message());
  std::replace(message.begin(), message.end(), '\n', ' ');
  std::cerr << "prism " << command << ": " << message << "\n";
  return ExitStatusFor(status);
}

absl::StatusOr<Format> ParseFormat(absl::string_view text, bool allow_csv) {
  const std::string f = absl::AsciiStrToLower(text);
  if (f == "text" || f == "table") return Format::kText;
  if (f == "json") return Format::kJson;
  if (f == "csv" && allow_csv) return Format::kCsv;
  return absl::InvalidArgumentError(absl::StrCat("unknown format '", text,
                                                 "' (use text, json",
                                                 allow_csv ? " or csv)" : ")"));
}

Table::Table(std::vector<std::string> columns) : columns_(std::move(columns)) {}

void Table::AddRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

namespace {

std::string CsvCell(const std::string& cell) {
  if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string JsonCell(const std::string& cell) {
  double number;
  if (cell.empty()) return "null";
  if (cell == "true" || cell == "false") return cell;
  if (!cell.empty() && absl::SimpleAtod(cell, &number) &&
      std::isfinite(number) &&
      cell.find_first_not_of("0123456789+-.eE") == std::string::npos) {
    return cell;
  }
  return JsonString(cell);
}

bool LooksNumeric(const std::string& cell) {
  double number;
  return !cell.empty() && absl::SimpleAtod(cell, &number);
}

}  // namespace

std::string Printable(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&out](unsigned char byte) {
    absl::StrAppend(&out, "\\x", absl::Hex(byte, absl::kZeroPad2));
  };
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) {
        escape(c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A valid UTF-8 sequence is kept, except the C1 controls U+0080..U+009F
    // (U+009B is a one-character CSI to some terminals); a stray or
    // truncated byte is escaped.
    const size_t length = c >= 0xf0 && c < 0xf5   ? 4
                          : c >= 0xe0 && c < 0xf0 ? 3
                          : c >= 0xc2 && c < 0xe0 ? 2
                                                  : 0;
    bool valid = length > 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) {
      valid = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    }
    const bool c1 =
        valid && c == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0;
    if (!valid || c1) {
      escape(c);
      ++i;
      continue;
    }
    out.append(text.data() + i, length);
    i += length;
  }
  return out;
}

void Table::Print(std::ostream& out, Format format) const {
  if (format != Format::kJson) {
    // Cells come from other users (experiment names, hosts, errors): text
    // and CSV go to terminals, so control characters are escaped.
    Table printable(columns_);
    for (const auto& row : rows_) {
      std::vector<std::string> cells;
      cells.reserve(row.size());
      for (const std::string& cell : row) cells.push_back(Printable(cell));
      printable.AddRow(std::move(cells));
    }
    printable.PrintRaw(out, format);
    return;
  }
  PrintRaw(out, format);
}

void Table::PrintRaw(std::ostream& out, Format format) const {
  switch (format) {
    case Format::kCsv: {
      std::vector<std::string> header;
      for (const auto& c : columns_) header.push_back(CsvCell(c));
      out << absl::StrJoin(header, ",") << "\n";
      for (const auto& row : rows_) {
        std::vector<std::string> cells;
        for (const auto& c : row) cells.push_back(CsvCell(c));
        out << absl::StrJoin(cells, ",") << "\n";
      }
      return;
    }
    case Format::kJson: {
      out << "[";
      for (size_t r = 0; r < rows_.size(); ++r) {
        out << (r ? ",\n " : "\n ") << "{";
        for (size_t c = 0; c < columns_.size(); ++c) {
          out << (c ? ", " : "") << JsonString(columns_[c]) << ": "
              << JsonCell(rows_[r][c]);
        }
        out << "}";
      }
      out << (rows_.empty() ? "]\n" : "\n]\n");
      return;
    }
    case Format::kText: {
      // A blank between two values reads as a misaligned column; a dash
      // says the value does not exist.
      const std::string missing = "-";
      auto shown = [&](const std::string& cell) -> const std::string& {
        return cell.empty() ? missing : cell;
      };
      // Numbers align right: a column of numbers and missing values. A
      // column of missing values only aligns right too (its dashes stand
      // for numbers more often than not: ci95 with one seed).
      std::vector<size_t> width(columns_.size());
      std::vector<bool> numeric(columns_.size());
      for (size_t c = 0; c < columns_.size(); ++c) {
        width[c] = DisplayWidth(columns_[c]);
        bool text = false;
        for (const auto& row : rows_) {
          width[c] = std::max(width[c], DisplayWidth(shown(row[c])));
          if (!row[c].empty() && !LooksNumeric(row[c])) text = true;
        }
        numeric[c] = !text;
      }
      auto print_row = [&](const std::vector<std::string>& row) {
        std::string line;
        for (size_t c = 0; c < row.size(); ++c) {
          const std::string& cell = shown(row[c]);
          if (c) line += "  ";
          const size_t pad = width[c] - DisplayWidth(cell);
          if (numeric[c]) line += std::string(pad, ' ');
          line += cell;
          if (!numeric[c] && c + 1 < row.size()) line += std::string(pad, ' ');
        }
        out << line << "\n";
      };
      print_row(columns_);
      for (const auto& row : rows_) print_row(row);
      return;
    }
  }
}

bool IsTerminal(int fd) { return isatty(fd) == 1; }

size_t DisplayWidth(absl::string_view text) {
  size_t width = 0;
  for (const char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++width;
  }
  return width;
}

std::string CutToWidth(absl::string_view text, size_t width) {
  if (DisplayWidth(text) <= width) return std::string(text);
  const size_t keep = width > 3 ? width - 3 : 0;
  size_t characters = 0, end = 0;
  for (; end < text.size(); ++end) {
    if ((static_cast<unsigned char>(text[end]) & 0xC0) != 0x80 &&
        characters++ == keep) {
      break;
    }
  }
  return absl::StrCat(text.substr(0, end), "...");
}

std::string WrapText(absl::string_view text, size_t width, size_t indent) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!out.empty()) out += '\n';
    size_t column = 0;
    bool first = true;
    for (absl::string_view word : absl::StrSplit(line, ' ')) {
      if (!first) {
        if (!word.empty() && column + 1 + DisplayWidth(word) > width) {
          out += '\n';
          out.append(indent, ' ');
          column = indent;
        } else {
          out += ' ';
          ++column;
        }
      }
      first = false;
      out.append(word.data(), word.size());
      column += DisplayWidth(word);
    }
  }
  return out;
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}:{:02}", s / 60, s % 60);
  return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
}

std::string FormatUtc(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

absl::StatusOr<int64_t> ParseDurationSeconds(absl::string_view text) {
  const auto invalid = [&text] {
    return absl::InvalidArgumentError(absl::StrCat(
        "duration '", text,
        "' is not a whole number of seconds with a unit s, m, h or d (e.g. "
        "90m, 12h, 30d)"));
  };
  if (text.empty()) return invalid();
  int64_t unit = 1;
  switch (text.back()) {
    case 's':
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    default:
      if (!absl::ascii_isdigit(text.back())) return invalid();
  }
  absl::string_view digits = text;
  if (!absl::ascii_isdigit(digits.back())) digits.remove_suffix(1);
  int64_t n = 0;
  // A 100-year cap keeps n * unit (and later * 1000 for ms) far from
  // overflow.
  constexpr int64_t kMaxSeconds = int64_t{100} * 365 * 86400;
  if (digits.empty() ||
      !std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(digits, &n) || n > kMaxSeconds / unit) {
    return invalid();
  }
  return n * unit;
}

Progress::Progress(std::string label, int64_t total,
                   std::chrono::seconds plain_interval)
    : label_(std::move(label)),
      total_(total),
      tty_(IsTerminal(STDERR_FILENO)),
      plain_interval_(plain_interval),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_ - plain_interval) {}

Progress::~Progress() {
  if (!finished_ && tty_ && done_ > 0) std::cerr << "\n";
}

void Progress::Update(int64_t done, absl::string_view suffix) {
  done_ = done;
  const auto now = std::chrono::steady_clock::now();
  const auto min_gap =
      tty_ ? std::chrono::milliseconds(100)
           : std::chrono::duration_cast<std::chrono::milliseconds>(
                 plain_interval_);
  if (now - last_draw_ < min_gap) return;
  last_draw_ = now;
  Draw(suffix, /*final=*/false);
}

void Progress::Finish(absl::string_view suffix) {
  if (finished_) return;
  finished_ = true;
  Draw(suffix, /*final=*/true);
}

void Progress::Draw(absl::string_view suffix, bool final) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  const double fraction =
      total_ > 0 ? std::clamp(static_cast<double>(done_) / total_, 0.0, 1.0)
                 : 0.0;
  std::string eta = "?";
  if (final) {
    eta = FormatDuration(elapsed);
  } else if (done_ > 0 && total_ > 0) {
    eta = FormatDuration(elapsed / fraction - elapsed);
  }
  const std::string counts = fmt::format("{}/{}", done_, total_);
  if (tty_) {
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar =
        std::string(filled, '#') + std::string(kWidth - filled, '.');
    std::cerr << fmt::format("\r\033[K{} [{}] {:3.0f}% {} {} {} {}", label_,
                             bar, fraction * 100, counts, std::string(suffix),
                             final ? "in" : "ETA", eta);
    if (final) std::cerr << "\n";
    std::cerr.flush();
  } else {
    std::cerr << fmt::format("{}: {:3.0f}% {} {} ({} {})\n", label_,
                             fraction * 100, counts, std::string(suffix),
                             final ? "took" : "ETA", eta);
  }
}

}  // namespace prism::cli
