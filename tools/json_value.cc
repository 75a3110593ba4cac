// The strict JSON parser (json_value.h): recursive descent over the text, one byte offset kept
// for the messages.
#include "json_value.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace weft {
namespace tools {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  bool parse(JsonValue* out, std::string* error) {
    skipSpace();
    bool ok = value(out, 0);
    if (ok) {
      skipSpace();
      if (pos_ != s_.size()) ok = fail("unexpected text after the JSON value");
    }
    if (!ok) *error = "offset " + std::to_string(errorAt_) + ": " + error_;
    return ok;
  }

 private:
  bool fail(const char* why) {
    if (error_.empty()) error_ = why, errorAt_ = pos_;
    return false;
  }
  bool atEnd() const { return pos_ >= s_.size(); }
  char peek() const { return atEnd() ? '\0' : s_[pos_]; }
  void skipSpace() {
    while (!atEnd() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool literal(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.compare(pos_, n, word) != 0) return fail("expected a JSON value");
    pos_ += n;
    return true;
  }

  bool value(JsonValue* out, int depth) {
    if (depth > kMaxJsonDepth) return fail("nested deeper than 64 levels");
    const char c = peek();
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      out->type = JsonValue::Type::kString;
      return string(&out->text);
    }
    if (c == 't' || c == 'f') {
      out->type = JsonValue::Type::kBool;
      out->boolean = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') return literal("null");
    if (c == '-' || (c >= '0' && c <= '9')) return number(out);
    return fail(atEnd() ? "the text ends where a value should be" : "expected a JSON value");
  }

  bool object(JsonValue* out, int depth) {
    out->type = JsonValue::Type::kObject;
    ++pos_;
    skipSpace();
    if (peek() == '}') return ++pos_, true;
    for (;;) {
      skipSpace();
      if (peek() != '"') return fail("expected a string key in an object");
      std::string key;
      const size_t keyAt = pos_;
      if (!string(&key)) return false;
      for (const auto& m : out->members) {
        if (m.first == key) {
          pos_ = keyAt;
          return fail("duplicate key in an object");
        }
      }
      skipSpace();
      if (peek() != ':') return fail("expected ':' after an object key");
      ++pos_;
      skipSpace();
      out->members.emplace_back(std::move(key), JsonValue());
      if (!value(&out->members.back().second, depth + 1)) return false;
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') return ++pos_, true;
      return fail("expected ',' or '}' in an object");
    }
  }

  bool array(JsonValue* out, int depth) {
    out->type = JsonValue::Type::kArray;
    ++pos_;
    skipSpace();
    if (peek() == ']') return ++pos_, true;
    for (;;) {
      skipSpace();
      out->items.emplace_back();
      if (!value(&out->items.back(), depth + 1)) return false;
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') return ++pos_, true;
      return fail("expected ',' or ']' in an array");
    }
  }

  bool hex4(uint32_t* out) {
    if (pos_ + 4 > s_.size()) return fail("a \\u escape needs four hex digits");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
      else return --pos_, fail("a \\u escape needs four hex digits");
    }
    *out = v;
    return true;
  }

  static void appendUtf8(std::string* out, uint32_t cp) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  bool unicodeEscape(std::string* out) {
    uint32_t cp = 0;
    if (!hex4(&cp)) return false;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("a lone low surrogate in a \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      uint32_t low = 0;
      if (s_.compare(pos_, 2, "\\u") != 0) return fail("a high surrogate not followed by a low one");
      pos_ += 2;
      if (!hex4(&low)) return false;
      if (low < 0xDC00 || low > 0xDFFF) return fail("a high surrogate not followed by a low one");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    appendUtf8(out, cp);
    return true;
  }

  bool string(std::string* out) {
    ++pos_;  // the opening quote
    for (;;) {
      if (atEnd()) return fail("a string is not closed");
      const unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') return ++pos_, true;
      if (c < 0x20) return fail("a control character inside a string (it must be escaped)");
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        ++pos_;
        continue;
      }
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u':
          if (!unicodeEscape(out)) return false;
          break;
        default: return --pos_, fail("an unknown escape in a string");
      }
    }
  }

  bool digits() {
    const size_t start = pos_;
    while (!atEnd() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    return pos_ > start;
  }

  bool number(JsonValue* out) {
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (peek() >= '0' && peek() <= '9') return fail("a number with a leading zero");
    } else if (!digits()) {
      return fail("a '-' not followed by digits");
    }
    if (peek() == '.') {
      ++pos_;
      if (!digits()) return fail("a decimal point not followed by digits");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!digits()) return fail("an exponent without digits");
    }
    out->type = JsonValue::Type::kNumber;
    out->text = s_.substr(start, pos_ - start);
    out->number = std::strtod(out->text.c_str(), nullptr);
    if (!std::isfinite(out->number)) return pos_ = start, fail("a number out of range");
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string error_;
  size_t errorAt_ = 0;
};

}  // namespace

const JsonValue* JsonValue::find(const char* key) const {
  if (type != Type::kObject) return nullptr;
  for (const auto& m : members) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

bool JsonValue::asInt(int64_t* out) const {
  if (type != Type::kNumber || text.find_first_of(".eE") != std::string::npos) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

bool parseJson(const std::string& text, JsonValue* out, std::string* error) {
  *out = JsonValue();
  return Parser(text).parse(out, error);
}

bool microsToNs(const JsonValue& v, int64_t* ns) {
  if (v.type != JsonValue::Type::kNumber || v.text[0] == '-') return false;
  const std::string& t = v.text;
  if (t.find_first_of("eE") != std::string::npos) {
    // Rare in practice (Weft writes plain decimals): through a double.
    if (v.number * 1000.0 > 9.2e18) return false;
    *ns = static_cast<int64_t>(std::llround(v.number * 1000.0));
    return true;
  }
  const size_t dot = t.find('.');
  const std::string whole = t.substr(0, dot);
  std::string frac = dot == std::string::npos ? "" : t.substr(dot + 1);
  frac = (frac + "000").substr(0, 3);  // nanoseconds; finer digits are cut
  if (whole.size() > 16) return false;
  const unsigned long long us = std::stoull(whole);
  if (us > 9223372036854774ull) return false;  // beyond int64_t nanoseconds
  *ns = static_cast<int64_t>(us) * 1000 + std::stoll(frac);
  return true;
}

}  // namespace tools
}  // namespace weft
