// A small strict JSON parser (RFC 8259) for the tools that read files Weft wrote (timelines:
// timeline.h). Strict: one value and nothing after it but white space, no trailing commas, no
// comments, no duplicate keys, no lone surrogates, nesting at most kMaxDepth deep. A refusal
// says at which byte offset and why.
#ifndef WEFT_TOOLS_JSON_VALUE_H_
#define WEFT_TOOLS_JSON_VALUE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace weft {
namespace tools {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  std::string text;  // a string's value (UTF-8), or a number exactly as written
  double number = 0;
  std::vector<JsonValue> items;                           // an array's
  std::vector<std::pair<std::string, JsonValue>> members;  // an object's, in file order

  // The member `key` of an object; null when absent or not an object.
  const JsonValue* find(const char* key) const;
  bool isString() const { return type == Type::kString; }
  bool isNumber() const { return type == Type::kNumber; }
  // A number with no fraction or exponent that fits in int64_t.
  bool asInt(int64_t* out) const;
};

constexpr int kMaxJsonDepth = 64;

// Parses `text` as exactly one JSON value; false with *error = "offset N: what went wrong".
bool parseJson(const std::string& text, JsonValue* out, std::string* error);

// A non-negative decimal number of microseconds ("12.345", "7", "1e3") as whole nanoseconds,
// exactly from its text (no double on the way for plain decimals); false when it is negative,
// not a number, or out of range.
bool microsToNs(const JsonValue& v, int64_t* ns);

}  // namespace tools
}  // namespace weft

#endif  // WEFT_TOOLS_JSON_VALUE_H_
