// The JSON reader (see json.h): recursive descent over the bytes, one function per grammar rule,
// errors carrying the position of the byte that did not fit.
#include "perf/json.h"

#include <cstdio>

namespace weft::perf::json {
namespace {

constexpr int kMaxDepth = 64;

std::string describe(char c) {
  if (c == '\0') return "the end of the text";
  char buf[32];
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
    std::snprintf(buf, sizeof buf, "byte 0x%02x", static_cast<unsigned char>(c));
  } else {
    std::snprintf(buf, sizeof buf, "'%c'", c);
  }
  return buf;
}

void appendUtf8(unsigned cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xc0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xe0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    *out += static_cast<char>(0xf0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  bool parseDocument(Value* out, std::string* error) {
    skipSpace();
    bool ok = parseValue(out, 0);
    if (ok) {
      skipSpace();
      if (pos_ < s_.size()) ok = fail("found " + describe(peek()) + " after the end of the top-level value");
    }
    if (!ok && error) *error = error_;
    return ok;
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool atEnd() const { return pos_ >= s_.size(); }

  void advance() {
    if (s_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }

  void skipSpace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) advance();
  }

  bool fail(const std::string& what) {
    error_ = "line " + std::to_string(line_) + ", column " + std::to_string(column_) + ": " + what;
    return false;
  }

  bool expectLiteral(const char* word) {
    for (const char* p = word; *p; ++p) {
      if (peek() != *p) return fail(std::string("expected '") + word + "', found " + describe(peek()));
      advance();
    }
    return true;
  }

  bool parseValue(Value* v, int depth) {
    v->line = line_;
    v->column = column_;
    const char c = peek();
    if (c == '{' || c == '[') {
      if (depth >= kMaxDepth) return fail("values nest deeper than 64 levels");
      return c == '{' ? parseObject(v, depth + 1) : parseArray(v, depth + 1);
    }
    if (c == '"') {
      v->kind = Value::Kind::kString;
      return parseString(&v->text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parseNumber(v);
    if (c == 't' || c == 'f') {
      v->kind = Value::Kind::kBool;
      v->boolean = c == 't';
      return expectLiteral(c == 't' ? "true" : "false");
    }
    if (c == 'n') return fail("found null, which weft-perf never writes; expected a value");
    return fail("expected a value (a string, number, true, false, array or object), found " + describe(c));
  }

  bool parseObject(Value* v, int depth) {
    v->kind = Value::Kind::kObject;
    advance();  // '{'
    skipSpace();
    if (peek() == '}') {
      advance();
      return true;
    }
    for (;;) {
      if (peek() != '"') return fail("expected a key (a string in double quotes), found " + describe(peek()));
      const int keyLine = line_, keyColumn = column_;
      std::string key;
      if (!parseString(&key)) return false;
      for (const auto& m : v->members) {
        if (m.first == key) {
          line_ = keyLine;
          column_ = keyColumn;
          return fail("duplicate key \"" + key + "\"");
        }
      }
      skipSpace();
      if (peek() != ':') return fail("expected ':' after the key \"" + key + "\", found " + describe(peek()));
      advance();
      skipSpace();
      v->members.emplace_back(key, Value{});
      if (!parseValue(&v->members.back().second, depth)) return false;
      skipSpace();
      if (peek() == '}') {
        advance();
        return true;
      }
      if (peek() != ',') return fail("expected ',' or '}' after a member of an object, found " + describe(peek()));
      advance();
      skipSpace();
    }
  }

  bool parseArray(Value* v, int depth) {
    v->kind = Value::Kind::kArray;
    advance();  // '['
    skipSpace();
    if (peek() == ']') {
      advance();
      return true;
    }
    for (;;) {
      v->items.emplace_back();
      if (!parseValue(&v->items.back(), depth)) return false;
      skipSpace();
      if (peek() == ']') {
        advance();
        return true;
      }
      if (peek() != ',') return fail("expected ',' or ']' after an element of an array, found " + describe(peek()));
      advance();
      skipSpace();
    }
  }

  bool parseHex4(unsigned* cp) {
    *cp = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      unsigned d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        d = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        d = c - 'A' + 10;
      } else {
        return fail("expected four hex digits after \\u, found " + describe(c));
      }
      *cp = *cp * 16 + d;
      advance();
    }
    return true;
  }

  bool parseString(std::string* out) {
    advance();  // '"'
    for (;;) {
      if (atEnd()) return fail("the text ends inside a string (a closing '\"' is missing)");
      const char c = peek();
      if (c == '"') {
        advance();
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        return fail("found " + describe(c) + " inside a string; control characters must be escaped (\\n, \\u001f)");
      }
      if (c != '\\') {
        *out += c;
        advance();
        continue;
      }
      advance();
      if (atEnd()) return fail("the text ends inside a string (a closing '\"' is missing)");
      const char e = peek();
      const char* simple = "\"\"\\\\//b\bf\fn\nr\rt\t";
      bool found = false;
      for (const char* p = simple; *p; p += 2) {
        if (e == p[0]) {
          *out += p[1];
          found = true;
        }
      }
      if (found) {
        advance();
        continue;
      }
      if (e != 'u') return fail("unknown escape \\" + std::string(1, e) + " in a string");
      advance();
      unsigned cp;
      if (!parseHex4(&cp)) return false;
      if (cp >= 0xdc00 && cp <= 0xdfff) return fail("a low surrogate \\u escape without a high one before it");
      if (cp >= 0xd800 && cp <= 0xdbff) {
        if (peek() != '\\') return fail("a high surrogate \\u escape must be followed by a low one");
        advance();
        if (peek() != 'u') return fail("a high surrogate \\u escape must be followed by a low one");
        advance();
        unsigned low;
        if (!parseHex4(&low)) return false;
        if (low < 0xdc00 || low > 0xdfff) return fail("a high surrogate \\u escape must be followed by a low one");
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
      }
      appendUtf8(cp, out);
    }
  }

  // RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  bool parseNumber(Value* v) {
    v->kind = Value::Kind::kNumber;
    const size_t start = pos_;
    auto digits = [&](const char* where) {
      if (!(peek() >= '0' && peek() <= '9')) return fail(std::string("expected a digit ") + where);
      while (peek() >= '0' && peek() <= '9') advance();
      return true;
    };
    if (peek() == '-') advance();
    if (peek() == '0') {
      advance();
      if (peek() >= '0' && peek() <= '9') return fail("a number may not have a leading zero");
    } else if (!digits("in a number")) {
      return false;
    }
    if (peek() == '.') {
      advance();
      if (!digits("after the decimal point")) return false;
    }
    if (peek() == 'e' || peek() == 'E') {
      advance();
      if (peek() == '+' || peek() == '-') advance();
      if (!digits("in the exponent")) return false;
    }
    v->text = s_.substr(start, pos_ - start);
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
  std::string error_;
};

}  // namespace

const char* kindName(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kString:
      return "a string";
    case Value::Kind::kNumber:
      return "a number";
    case Value::Kind::kBool:
      return "true or false";
    case Value::Kind::kArray:
      return "an array";
    case Value::Kind::kObject:
      return "an object";
  }
  return "a value";
}

bool parse(const std::string& text, Value* out, std::string* error) {
  Value v;
  Parser p(text);
  if (!p.parseDocument(&v, error)) return false;
  *out = std::move(v);
  return true;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace weft::perf::json
