#include "topology/topo_file_values.h"

#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>

namespace weft {
namespace topo {

std::string trimBlanks(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool startsWithNoCase(const std::string& s, const char* prefix) {
  size_t n = std::strlen(prefix);
  if (s.size() < n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

// Decimal, or hex with 0x; an optional sign.
bool parseInteger(const std::string& text, long long* out) {
  std::string t = trimBlanks(text);
  const char* b = t.data();
  const char* e = b + t.size();
  bool negative = false;
  if (b != e && (*b == '-' || *b == '+')) negative = *b++ == '-';
  int base = 10;
  if (e - b > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X')) {
    base = 16;
    b += 2;
  }
  unsigned long long v = 0;
  auto r = std::from_chars(b, e, v, base);
  if (b == e || r.ec != std::errc() || r.ptr != e || v > static_cast<unsigned long long>(LLONG_MAX)) return false;
  *out = negative ? -static_cast<long long>(v) : static_cast<long long>(v);
  return true;
}

// Hex with or without 0x.
bool parseHex(const std::string& text, uint64_t* out) {
  std::string t = trimBlanks(text);
  const char* b = t.data();
  const char* e = b + t.size();
  if (e - b > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X')) b += 2;
  uint64_t v = 0;
  auto r = std::from_chars(b, e, v, 16);
  if (b == e || r.ec != std::errc() || r.ptr != e) return false;
  *out = v;
  return true;
}

// A finite number at the start of `text`; *rest is what follows it.
bool parseRealPrefix(const std::string& text, double* out, std::string* rest) {
  std::string t = trimBlanks(text);
  const char* b = t.data();
  const char* e = b + t.size();
  if (b != e && *b == '+') ++b;
  double v = 0;
  auto r = std::from_chars(b, e, v);
  if (b == e || r.ec != std::errc() || !std::isfinite(v)) return false;
  *out = v;
  *rest = trimBlanks(std::string(r.ptr, e));
  return true;
}

bool parseLinkSpeed(const std::string& text, double* gts) {
  std::string t = trimBlanks(text);
  if (t.empty() || startsWithNoCase(t, "unknown")) {
    *gts = 0;
    return true;
  }
  double v = 0;
  std::string rest;
  if (!parseRealPrefix(t, &v, &rest) || v < 0 || v > 1000 || !(rest.empty() || startsWithNoCase(rest, "GT/s"))) {
    return false;
  }
  *gts = v;
  return true;
}

}  // namespace topo
}  // namespace weft
