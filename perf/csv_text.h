// CSV text for the results files (results.cc): quoting a field (RFC 4180, plus what
// spreadsheets would trim), reading one record, and the escapes of a "# key=value" comment line.
#ifndef WEFT_PERF_CSV_TEXT_H_
#define WEFT_PERF_CSV_TEXT_H_

#include <cstddef>
#include <string>
#include <vector>

namespace weft::perf {

// A field needs quotes for the RFC 4180 specials, and also when it would start a '#' line or
// has blanks at an end (which spreadsheets trim).
std::string csvField(const std::string& s);

// Summary values sit on one comment line: backslash, newline and carriage return are escaped.
std::string escapeComment(const std::string& s);
// The reverse; false on a backslash that is not one of those escapes.
bool unescapeComment(const std::string& s, std::string* out);

// One RFC 4180 record from text[*pos], through its line end (LF or CRLF) or the end of the
// text. *line counts the lines consumed (quoted fields may hold newlines).
bool readCsvRecord(const std::string& text, size_t* pos, int* line, std::vector<std::string>* fields,
                   std::string* error);

}  // namespace weft::perf

#endif  // WEFT_PERF_CSV_TEXT_H_
