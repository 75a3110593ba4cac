// A strict, small JSON reader and the string quoting of its writer, for weft-perf's results file
// (results.h). No external library: the results must be readable on a bare build machine. The
// reader takes RFC 8259 JSON minus null (weft-perf never writes it) and keeps numbers as the
// literal text, so that 64-bit integers reach their fields exactly; every value remembers its
// line and column for the error messages of whoever maps it onto structs.
#ifndef WEFT_PERF_JSON_H_
#define WEFT_PERF_JSON_H_

#include <string>
#include <utility>
#include <vector>

namespace weft::perf::json {

struct Value {
  enum class Kind { kString, kNumber, kBool, kArray, kObject };
  Kind kind = Kind::kObject;
  std::string text;  // kString: the decoded bytes (UTF-8); kNumber: the literal as written
  bool boolean = false;
  std::vector<Value> items;                            // kArray
  std::vector<std::pair<std::string, Value>> members;  // kObject, in file order, keys unique
  int line = 0;                                        // 1-based, where the value starts
  int column = 0;                                      // 1-based, in bytes
};

// "a string", "a number", ... for messages.
const char* kindName(Value::Kind kind);

// Parses one JSON value filling the whole text (surrounding whitespace allowed). On failure
// returns false with "line L, column C: what was found, what was expected" in *error.
// Rejects null, duplicate keys, control characters in strings, lone surrogates and nesting
// deeper than 64.
bool parse(const std::string& text, Value* out, std::string* error);

// A JSON string literal: quotes, \" \\ and \n \r \t \b \f, \u00XX for other control bytes;
// other bytes (UTF-8 included) as they are.
std::string quote(const std::string& s);

}  // namespace weft::perf::json

#endif  // WEFT_PERF_JSON_H_
