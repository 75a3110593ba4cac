#include "topology/xml.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace weft {
namespace topo {
namespace {

bool isNameStart(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || u == '_' || u == ':' || u >= 0x80;
}

bool isNameChar(char c) { return isNameStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string shown(const std::string& text) { return xmlShown(text); }

void appendUtf8(uint32_t cp, std::string* out) {
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

bool validXmlChar(uint32_t cp) {
  return cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) ||
         (cp >= 0x10000 && cp <= 0x10ffff);
}

class Parser {
 public:
  Parser(const std::string& text, const std::string& source, const XmlLimits& limits)
      : text_(text), source_(source), limits_(limits) {}

  Status parseDocument(XmlElement* root) {
    WEFT_TRY(checkCharacters());
    if (text_.compare(0, 3, "\xef\xbb\xbf") == 0) pos_ = 3;  // UTF-8 byte order mark
    WEFT_TRY(skipMisc());
    if (atEnd()) return error(line_, "no root element: the input is empty or holds only comments");
    if (peek() != '<' || !isNameStart(peek(1))) {
      return error(line_, "expected '<' and an element name to open the root element, found '%s'",
                   shown(text_.substr(pos_, 16)).c_str());
    }
    WEFT_TRY(parseElement(root, 1));
    WEFT_TRY(skipMisc());
    if (!atEnd()) {
      return error(line_, "unexpected '%s' after the root element <%s> ended (a file holds one root element)",
                   shown(text_.substr(pos_, 16)).c_str(), shown(root->name).c_str());
    }
    return Status::ok();
  }

 private:
  bool atEnd() const { return pos_ >= text_.size(); }
  // '\0' past the end; the input holds no NUL (checkCharacters), so '\0' means the end.
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool startsWith(const char* s) const { return text_.compare(pos_, std::strlen(s), s) == 0; }

  void advanceTo(size_t newPos) {
    newPos = std::min(newPos, text_.size());
    line_ += static_cast<int>(std::count(text_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                         text_.begin() + static_cast<std::ptrdiff_t>(newPos), '\n'));
    pos_ = newPos;
  }
  void advance(size_t n = 1) { advanceTo(pos_ + n); }

  bool skipSpace() {
    size_t start = pos_;
    while (!atEnd() && isSpace(peek())) advance();
    return pos_ != start;
  }

  Status error(int line, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
    va_list args;
    va_start(args, fmt);
    const std::string what = formatTextV(fmt, args);
    va_end(args);
    return WEFT_ERROR(weftInvalidArgument, "%s: %s", xmlWhere(source_, line).c_str(), what.c_str());
  }

  Status checkCharacters() {
    int line = 1;
    for (char ch : text_) {
      unsigned char c = static_cast<unsigned char>(ch);
      if (c == '\n') ++line;
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
        return error(line, "control character 0x%02x is not allowed in an XML file (is this a binary file?)", c);
      }
    }
    return Status::ok();
  }

  // Skips "<terminator>" starting at the current "<opener...", or fails naming the opener's line.
  Status skipPast(const char* terminator, const char* what) {
    int openLine = line_;
    size_t end = text_.find(terminator, pos_ + 2);
    if (end == std::string::npos)
      return error(openLine, "unclosed %s (no '%s' before the end of input)", what, terminator);
    advanceTo(end + std::strlen(terminator));
    return Status::ok();
  }

  Status skipDoctype() {
    int openLine = line_;
    int brackets = 0;
    for (advance(9); !atEnd(); advance()) {
      char c = peek();
      if (c == '[')
        ++brackets;
      else if (c == ']')
        --brackets;
      else if (c == '>' && brackets <= 0) {
        advance();
        return Status::ok();
      }
    }
    return error(openLine, "unclosed <!DOCTYPE (no '>' before the end of input)");
  }

  // Whitespace, comments, processing instructions and a DOCTYPE around the root element.
  Status skipMisc() {
    for (;;) {
      skipSpace();
      if (startsWith("<?"))
        WEFT_TRY(skipPast("?>", "processing instruction <?...?>"));
      else if (startsWith("<!--"))
        WEFT_TRY(skipPast("-->", "comment <!--"));
      else if (startsWith("<!DOCTYPE"))
        WEFT_TRY(skipDoctype());
      else
        return Status::ok();
    }
  }

  void readName(std::string* out) {
    size_t start = pos_;
    while (!atEnd() && isNameChar(peek())) ++pos_;  // names hold no newline
    out->assign(text_, start, pos_ - start);
  }

  Status readEntity(const std::string& attrName, int attrLine, std::string* out) {
    size_t semi = text_.find(';', pos_);
    if (semi == std::string::npos || semi - pos_ > 12) {
      return error(attrLine, "'&' in the value of attribute %s does not start an entity (write &amp; for '&')",
                   shown(attrName).c_str());
    }
    std::string name = text_.substr(pos_ + 1, semi - pos_ - 1);
    if (name == "lt")
      *out += '<';
    else if (name == "gt")
      *out += '>';
    else if (name == "amp")
      *out += '&';
    else if (name == "quot")
      *out += '"';
    else if (name == "apos")
      *out += '\'';
    else if (name.size() >= 2 && name[0] == '#') {
      bool hex = name[1] == 'x' || name[1] == 'X';
      std::string digits = name.substr(hex ? 2 : 1);
      uint32_t cp = 0;
      bool ok = !digits.empty() && digits.size() <= 8;
      for (char c : digits) {
        int d = -1;
        if (c >= '0' && c <= '9')
          d = c - '0';
        else if (hex && c >= 'a' && c <= 'f')
          d = c - 'a' + 10;
        else if (hex && c >= 'A' && c <= 'F')
          d = c - 'A' + 10;
        if (d < 0)
          ok = false;
        else
          cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(d);
      }
      if (!ok || !validXmlChar(cp)) {
        return error(attrLine, "character reference &%s; in attribute %s is not a valid character", shown(name).c_str(),
                     shown(attrName).c_str());
      }
      appendUtf8(cp, out);
    } else {
      return error(attrLine, "unknown entity &%s; in attribute %s (XML knows &lt; &gt; &amp; &quot; &apos;)",
                   shown(name).c_str(), shown(attrName).c_str());
    }
    advanceTo(semi + 1);
    return Status::ok();
  }

  Status readAttribute(XmlElement* e) {
    XmlAttribute a;
    a.line = line_;
    readName(&a.name);
    skipSpace();
    if (peek() != '=') {
      return error(line_, "expected '=' after attribute name %s in <%s ...>", shown(a.name).c_str(),
                   shown(e->name).c_str());
    }
    advance();
    skipSpace();
    char quote = peek();
    if (quote != '"' && quote != '\'') {
      return error(line_, "expected a quoted value for attribute %s in <%s ...>", shown(a.name).c_str(),
                   shown(e->name).c_str());
    }
    advance();
    for (;;) {
      if (atEnd()) {
        return error(a.line, "unterminated value of attribute %s in <%s ...> (no closing %c)", shown(a.name).c_str(),
                     shown(e->name).c_str(), quote);
      }
      char c = peek();
      if (c == quote) {
        advance();
        break;
      }
      if (c == '<') {
        return error(line_, "'<' in the value of attribute %s in <%s ...> (missing closing %c?)", shown(a.name).c_str(),
                     shown(e->name).c_str(), quote);
      }
      if (c == '&') {
        WEFT_TRY(readEntity(a.name, line_, &a.value));
        continue;
      }
      a.value += isSpace(c) ? ' ' : c;
      advance();
    }
    for (const XmlAttribute& other : e->attributes) {
      if (other.name == a.name) {
        return error(a.line, "attribute %s appears twice in <%s ...> (first at line %d)", shown(a.name).c_str(),
                     shown(e->name).c_str(), other.line);
      }
    }
    e->attributes.push_back(std::move(a));
    return Status::ok();
  }

  Status readAttributes(XmlElement* e, bool* selfClosing) {
    for (;;) {
      bool hadSpace = skipSpace();
      char c = peek();
      if (c == '>') {
        advance();
        *selfClosing = false;
        return Status::ok();
      }
      if (c == '/' && peek(1) == '>') {
        advance(2);
        *selfClosing = true;
        return Status::ok();
      }
      if (!hadSpace || !isNameStart(c)) {
        if (atEnd()) {
          return error(line_, "expected '>' to close <%s ...> opened at line %d, found the end of input",
                       shown(e->name).c_str(), e->line);
        }
        return error(line_, "expected '>' to close <%s ...>, found '%s'", shown(e->name).c_str(),
                     shown(text_.substr(pos_, 12)).c_str());
      }
      if (e->attributes.size() >= limits_.maxAttributes) {
        return error(line_, "<%s> has more than %zu attributes; refused", shown(e->name).c_str(),
                     limits_.maxAttributes);
      }
      WEFT_TRY(readAttribute(e));
    }
  }

  Status parseContent(XmlElement* e, int depth) {
    for (;;) {
      size_t lt = text_.find('<', pos_);
      if (lt == std::string::npos) {
        advanceTo(text_.size());
        return error(line_, "unclosed <%s> opened at line %d (end of input reached)", shown(e->name).c_str(), e->line);
      }
      advanceTo(lt);  // text between elements carries nothing in a topology file
      if (startsWith("</")) {
        int closeLine = line_;
        advance(2);
        std::string name;
        readName(&name);
        skipSpace();
        if (peek() != '>') {
          return error(line_, "expected '>' to close </%s", shown(name).c_str());
        }
        advance();
        if (name != e->name) {
          return error(closeLine, "</%s> does not match <%s> opened at line %d", shown(name).c_str(),
                       shown(e->name).c_str(), e->line);
        }
        return Status::ok();
      }
      if (startsWith("<!--")) {
        WEFT_TRY(skipPast("-->", "comment <!--"));
      } else if (startsWith("<![CDATA[")) {
        WEFT_TRY(skipPast("]]>", "<![CDATA["));
      } else if (startsWith("<?")) {
        WEFT_TRY(skipPast("?>", "processing instruction <?...?>"));
      } else if (isNameStart(peek(1))) {
        e->children.emplace_back();
        WEFT_TRY(parseElement(&e->children.back(), depth + 1));
      } else {
        return error(line_, "expected an element name after '<' inside <%s> (write &lt; for a literal '<')",
                     shown(e->name).c_str());
      }
    }
  }

  Status parseElement(XmlElement* e, int depth) {
    e->line = line_;
    advance();  // '<'
    readName(&e->name);
    if (depth > limits_.maxDepth) {
      return error(e->line, "<%s> is nested %d levels deep; more than %d is refused", shown(e->name).c_str(), depth,
                   limits_.maxDepth);
    }
    if (++elements_ > limits_.maxElements) {
      return error(e->line, "more than %zu elements; a topology file this large is refused", limits_.maxElements);
    }
    bool selfClosing = false;
    WEFT_TRY(readAttributes(e, &selfClosing));
    if (selfClosing) return Status::ok();
    return parseContent(e, depth);
  }

  const std::string& text_;
  const std::string& source_;
  const XmlLimits& limits_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t elements_ = 0;
};

}  // namespace

const XmlAttribute* XmlElement::attribute(const char* attrName) const {
  for (const XmlAttribute& a : attributes) {
    if (a.name == attrName) return &a;
  }
  return nullptr;
}

std::string xmlShown(const std::string& text, size_t maxLen) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < maxLen; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
  }
  if (text.size() > maxLen) out += "...";
  return out;
}

std::string xmlWhere(const std::string& sourceName, int line) {
  if (sourceName.empty()) return "line " + std::to_string(line);
  return sourceName + ":" + std::to_string(line);
}

Status parseXml(const std::string& text, const std::string& sourceName, XmlElement* root, const XmlLimits& limits) {
  if (text.size() > limits.maxBytes) {
    return WEFT_ERROR(weftInvalidArgument, "%s: %zu bytes; topology files larger than %zu bytes are refused",
                      sourceName.empty() ? "input" : sourceName.c_str(), text.size(), limits.maxBytes);
  }
  XmlElement parsed;
  Parser parser(text, sourceName, limits);
  WEFT_TRY(parser.parseDocument(&parsed));
  *root = std::move(parsed);
  return Status::ok();
}

std::string xmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        if (c < 0x20) {
          // Only tab, newline and carriage return are valid XML characters; as references they
          // survive attribute-value normalisation. Others cannot be written and are dropped.
          if (c == '\t' || c == '\n' || c == '\r') {
            char ref[8];
            std::snprintf(ref, sizeof(ref), "&#x%x;", c);
            out += ref;
          }
        } else {
          out += ch;
        }
    }
  }
  return out;
}

}  // namespace topo
}  // namespace weft
