// CSV text for the results files; see csv_text.h.
#include "perf/csv_text.h"

namespace weft::perf {

// A field needs quotes for the RFC 4180 specials, and also when it would start a '#' line or
// has blanks at an end (which spreadsheets trim).
std::string csvField(const std::string& s) {
  const bool quote = s.find_first_of(",\"\r\n") != std::string::npos || (!s.empty() && s[0] == '#') ||
                     (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.back() == ' ' || s.back() == '\t'));
  if (!quote) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Summary values sit on one comment line: backslash, newline and carriage return are escaped.
std::string escapeComment(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out;
}

bool unescapeComment(const std::string& s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      *out += s[i];
      continue;
    }
    const char e = ++i < s.size() ? s[i] : '\0';
    if (e == '\\') {
      *out += '\\';
    } else if (e == 'n') {
      *out += '\n';
    } else if (e == 'r') {
      *out += '\r';
    } else {
      return false;
    }
  }
  return true;
}

// One RFC 4180 record from text[*pos], through its line end (LF or CRLF) or the end of the
// text. *line counts the lines consumed (quoted fields may hold newlines).
bool readCsvRecord(const std::string& text, size_t* pos, int* line, std::vector<std::string>* fields,
                   std::string* error) {
  fields->assign(1, "");
  size_t i = *pos;
  const int startLine = *line;
  auto fail = [&](const std::string& what) {
    *error = "line " + std::to_string(*line) + ", field " + std::to_string(fields->size()) + ": " + what;
    return false;
  };
  bool atFieldStart = true;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      i += c == '\r' ? 2 : 1;
      ++*line;
      break;
    }
    if (c == ',') {
      fields->emplace_back();
      atFieldStart = true;
      ++i;
      continue;
    }
    if (c == '"' && atFieldStart) {
      ++i;
      for (;;) {
        if (i >= text.size()) {
          *line = startLine;
          return fail("a quoted field is not closed before the end of the text");
        }
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            fields->back() += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        if (text[i] == '\n') ++*line;
        fields->back() += text[i++];
      }
      if (i < text.size() && text[i] != ',' && text[i] != '\n' &&
          !(text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
        return fail("a closing quote must be followed by ',' or the end of the line");
      }
      atFieldStart = false;
      continue;
    }
    if (c == '"') return fail("a '\"' inside an unquoted field (quote the field and double the '\"')");
    fields->back() += c;
    atFieldStart = false;
    ++i;
  }
  *pos = i;
  return true;
}

}  // namespace weft::perf
