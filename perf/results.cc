// The results files (see results.h): JSON and CSV writers and their strict readers. Both walk
// one table of fields per struct, so a field added to Measurement or RunSummary is added to
// both formats (and read back) by one line here.
//
// Numbers round-trip exactly: integers as decimal, doubles in the shortest of %.15g, %.16g and
// %.17g that reads back to the same bits. JSON has no NaN or infinity, so those doubles are
// written as the strings "NaN", "Infinity" and "-Infinity"; the CSV writes nan, inf and -inf.
#include "perf/results.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <variant>

#include "perf/csv_text.h"
#include "perf/json.h"

namespace weft::perf {
namespace {

using Strings = std::vector<std::string>;

template <typename T>
using Member =
    std::variant<std::string T::*, int T::*, size_t T::*, int64_t T::*, bool T::*, double T::*, Strings T::*>;

// `name` in JSON and in the CSV header; a list is written in the CSV comments as one
// "# item=value" line per element, `item` being the singular.
template <typename T>
struct Field {
  const char* name;
  Member<T> member;
  const char* item = nullptr;
};

const Field<RunSummary> kSummaryFields[] = {
    {"program", &RunSummary::program},
    {"collective", &RunSummary::collective},
    {"host", &RunSummary::host},
    {"date", &RunSummary::date},
    {"memory", &RunSummary::memory},
    {"topology", &RunSummary::topology},
    {"weft_version", &RunSummary::weftVersion},
    {"nranks", &RunSummary::nranks},
    {"libraries", &RunSummary::libraries, "library"},
    {"notes", &RunSummary::notes, "note"},
};

// The key names follow weft-perf's -J file (report.h): size, redop, *_gbs.
const Field<Measurement> kRowFields[] = {
    {"library", &Measurement::library}, {"collective", &Measurement::collective},
    {"type", &Measurement::type},       {"redop", &Measurement::op},
    {"root", &Measurement::root},       {"size", &Measurement::bytes},
    {"count", &Measurement::count},     {"in_place", &Measurement::inPlace},
    {"time_us", &Measurement::timeUs},  {"algbw_gbs", &Measurement::algBw},
    {"busbw_gbs", &Measurement::busBw}, {"wrong", &Measurement::wrong},
    {"checked", &Measurement::checked}, {"status", &Measurement::status},
};

constexpr const char* kCsvMagic = "# weft-perf results";

template <typename T, size_t N>
constexpr size_t countOf(const T (&)[N]) {
  return N;
}

template <typename T>
bool isList(const Field<T>& f) {
  return std::holds_alternative<Strings T::*>(f.member);
}

std::string formatDouble(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// Decimal only: strtod would also take hex, "infinity" and leading blanks.
bool parseDouble(const std::string& s, double* v) {
  if (s == "nan") {
    *v = std::nan("");
    return true;
  }
  if (s == "inf" || s == "-inf") {
    *v = s[0] == '-' ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  if (s.empty() || s.find_first_not_of("0123456789+-.eE") != std::string::npos) return false;
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return *end == '\0';
}

template <typename I>
bool parseInteger(const std::string& s, I* v) {
  const bool isSigned = static_cast<I>(-1) < 0;
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!(s[i] >= '0' && s[i] <= '9') && !(i == 0 && s[i] == '-' && isSigned && s.size() > 1)) return false;
  }
  errno = 0;
  if (isSigned) {
    const long long x = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == ERANGE || static_cast<long long>(static_cast<I>(x)) != x) return false;
    *v = static_cast<I>(x);
  } else {
    const unsigned long long x = std::strtoull(s.c_str(), nullptr, 10);
    if (errno == ERANGE || static_cast<unsigned long long>(static_cast<I>(x)) != x) return false;
    *v = static_cast<I>(x);
  }
  return true;
}

// The text of a scalar field, as the CSV writes it and JSON writes numbers.
template <typename T>
std::string scalarText(const T& obj, const Member<T>& m) {
  struct Visitor {
    const T& o;
    std::string operator()(std::string T::*p) const { return o.*p; }
    std::string operator()(int T::*p) const { return std::to_string(o.*p); }
    std::string operator()(size_t T::*p) const { return std::to_string(o.*p); }
    std::string operator()(int64_t T::*p) const { return std::to_string(o.*p); }
    std::string operator()(bool T::*p) const { return o.*p ? "true" : "false"; }
    std::string operator()(double T::*p) const { return formatDouble(o.*p); }
    std::string operator()(Strings T::*) const { return ""; }
  };
  return std::visit(Visitor{obj}, m);
}

// Sets a scalar field from its text; false with what was expected in *why.
template <typename T>
bool setScalar(T* obj, const Member<T>& m, const std::string& text, std::string* why) {
  struct Visitor {
    T* o;
    const std::string& t;
    std::string* why;
    bool operator()(std::string T::*p) const {
      o->*p = t;
      return true;
    }
    bool operator()(int T::*p) const {
      *why = "an integer that fits in 32 bits";
      return parseInteger(t, &(o->*p));
    }
    bool operator()(size_t T::*p) const {
      *why = "an unsigned integer";
      return parseInteger(t, &(o->*p));
    }
    bool operator()(int64_t T::*p) const {
      *why = "an integer that fits in 64 bits";
      return parseInteger(t, &(o->*p));
    }
    bool operator()(bool T::*p) const {
      *why = "true or false";
      if (t != "true" && t != "false") return false;
      o->*p = t == "true";
      return true;
    }
    bool operator()(double T::*p) const {
      *why = "a number (or nan, inf, -inf)";
      return parseDouble(t, &(o->*p));
    }
    bool operator()(Strings T::*) const { return false; }
  };
  return std::visit(Visitor{obj, text, why}, m);
}

// ---- JSON -------------------------------------------------------------------------------------

template <typename T>
std::string jsonField(const T& obj, const Field<T>& f) {
  std::string s = json::quote(f.name) + ": ";
  if (auto p = std::get_if<Strings T::*>(&f.member)) {
    s += "[";
    for (size_t i = 0; i < (obj.**p).size(); ++i) s += (i ? ", " : "") + json::quote((obj.**p)[i]);
    return s + "]";
  }
  if (std::holds_alternative<std::string T::*>(f.member)) return s + json::quote(scalarText(obj, f.member));
  if (auto p = std::get_if<double T::*>(&f.member)) {
    const double v = obj.**p;
    if (std::isnan(v)) return s + "\"NaN\"";
    if (std::isinf(v)) return s + (v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  }
  return s + scalarText(obj, f.member);
}

std::string at(const json::Value& v) {
  return "line " + std::to_string(v.line) + ", column " + std::to_string(v.column) + ": ";
}

template <typename T>
bool readJsonField(const json::Value& v, const Field<T>& f, const std::string& path, T* out, std::string* error) {
  using Kind = json::Value::Kind;
  auto wrongKind = [&](const char* expected) {
    *error = at(v) + path + ": expected " + expected + ", found " + json::kindName(v.kind);
    return false;
  };
  if (auto p = std::get_if<Strings T::*>(&f.member)) {
    if (v.kind != Kind::kArray) return wrongKind("an array of strings");
    Strings list;
    for (size_t i = 0; i < v.items.size(); ++i) {
      const json::Value& item = v.items[i];
      if (item.kind != Kind::kString) {
        *error = at(item) + path + "[" + std::to_string(i) + "]: expected a string, found " + json::kindName(item.kind);
        return false;
      }
      list.push_back(item.text);
    }
    out->** p = std::move(list);
    return true;
  }
  if (std::holds_alternative<std::string T::*>(f.member)) {
    if (v.kind != Kind::kString) return wrongKind("a string");
    std::string why;
    return setScalar(out, f.member, v.text, &why);
  }
  if (std::holds_alternative<bool T::*>(f.member)) {
    if (v.kind != Kind::kBool) return wrongKind("true or false");
    std::string why;
    return setScalar(out, f.member, v.boolean ? "true" : "false", &why);
  }
  if (auto p = std::get_if<double T::*>(&f.member); p && v.kind == Kind::kString) {
    if (v.text == "NaN" || v.text == "Infinity" || v.text == "-Infinity") {
      out->** p = v.text == "NaN" ? std::nan("") : v.text[0] == '-' ? -HUGE_VAL : HUGE_VAL;
      return true;
    }
    *error = at(v) + path + ": expected a number (or \"NaN\", \"Infinity\", \"-Infinity\"), found \"" + v.text + "\"";
    return false;
  }
  std::string why;
  if (v.kind == Kind::kNumber && setScalar(out, f.member, v.text, &why)) return true;
  setScalar(out, f.member, "", &why);  // only to learn what the field takes
  if (v.kind != Kind::kNumber) return wrongKind(why.c_str());
  *error = at(v) + path + ": expected " + why + ", found " + v.text;
  return false;
}

template <typename T, size_t N>
bool readJsonObject(const json::Value& v, const Field<T> (&fields)[N], const std::string& path, T* out,
                    std::string* error) {
  if (v.kind != json::Value::Kind::kObject) {
    *error = at(v) + path + ": expected an object, found " + json::kindName(v.kind);
    return false;
  }
  bool seen[N] = {};
  for (const auto& [key, value] : v.members) {
    size_t i = 0;
    while (i < N && key != fields[i].name) ++i;
    if (i == N) {
      *error = at(value) + path + ": unknown key \"" + key + "\"";
      return false;
    }
    seen[i] = true;
    if (!readJsonField(value, fields[i], path + "." + key, out, error)) return false;
  }
  for (size_t i = 0; i < N; ++i) {
    if (!seen[i]) {
      *error = at(v) + path + ": the key \"" + fields[i].name + "\" is missing";
      return false;
    }
  }
  return true;
}

// ---- CSV --------------------------------------------------------------------------------------

// The text level (quoting, records, comment escapes) is csv_text.h.

// One "# key=value" line of the summary (not the first): the key must be a summary field, a
// scalar one at most once (seen[]); list keys add an item.
bool readSummaryLine(const std::string& l, const std::string& where, bool seen[], RunSummary* run,
                     std::string* error) {
  constexpr size_t kN = countOf(kSummaryFields);
  const size_t eq = l.find('=');
  if (l.compare(0, 2, "# ") != 0 || eq == std::string::npos) {
    *error = where + "expected a summary line \"# key=value\", found \"" + l + "\"";
    return false;
  }
  const std::string key = l.substr(2, eq - 2);
  std::string value;
  if (!unescapeComment(l.substr(eq + 1), &value)) {
    *error = where + "the value of " + key + " has a '\\' that is not \\\\, \\n or \\r";
    return false;
  }
  size_t i = 0;
  while (i < kN && key != (kSummaryFields[i].item ? kSummaryFields[i].item : kSummaryFields[i].name)) ++i;
  if (i == kN) {
    *error = where + "unknown summary key \"" + key + "\"";
    return false;
  }
  const Field<RunSummary>& f = kSummaryFields[i];
  if (isList(f)) {
    (run->*std::get<Strings RunSummary::*>(f.member)).push_back(value);
    return true;
  }
  if (seen[i]) {
    *error = where + "the summary key \"" + key + "\" appears twice";
    return false;
  }
  seen[i] = true;
  std::string why;
  if (!setScalar(run, f.member, value, &why)) {
    *error = where + key + ": expected " + why + ", found \"" + value + "\"";
    return false;
  }
  return true;
}

bool readCsvSummary(const std::string& text, size_t* pos, int* line, RunSummary* run, std::string* error) {
  constexpr size_t kN = countOf(kSummaryFields);
  bool seen[kN] = {};
  bool magic = false;
  while (*pos < text.size() && text[*pos] == '#') {
    size_t end = text.find('\n', *pos);
    if (end == std::string::npos) end = text.size();
    std::string l = text.substr(*pos, end - *pos);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    const std::string where = "line " + std::to_string(*line) + ": ";
    *pos = end < text.size() ? end + 1 : end;
    ++*line;
    if (!magic) {
      if (l != kCsvMagic) {
        *error = where + "expected the first line \"" + kCsvMagic + "\", found \"" + l + "\"";
        return false;
      }
      magic = true;
      continue;
    }
    if (!readSummaryLine(l, where, seen, run, error)) return false;
  }
  if (!magic) {
    *error = std::string("line 1: expected the first line \"") + kCsvMagic + "\"";
    return false;
  }
  for (size_t i = 0; i < kN; ++i) {
    if (!seen[i] && !isList(kSummaryFields[i])) {
      *error = "line " + std::to_string(*line) + ": the summary line \"# " + kSummaryFields[i].name +
               "=...\" is missing before the header";
      return false;
    }
  }
  return true;
}

// The header names the columns; any order is read, each column exactly once. (*column)[c] is
// the row field of column c.
bool readCsvHeader(const std::string& text, size_t* pos, int* line, Strings* header, std::vector<size_t>* column,
                   std::string* error) {
  constexpr size_t kN = countOf(kRowFields);
  const int headerLine = *line;
  if (*pos >= text.size()) {
    *error = "line " + std::to_string(*line) + ": the header line (" + kRowFields[0].name + "," + kRowFields[1].name +
             ",...) is missing after the summary";
    return false;
  }
  if (!readCsvRecord(text, pos, line, header, error)) return false;
  column->assign(header->size(), 0);
  bool seen[kN] = {};
  for (size_t c = 0; c < header->size(); ++c) {
    size_t i = 0;
    while (i < kN && (*header)[c] != kRowFields[i].name) ++i;
    if (i == kN || seen[i]) {
      *error = "line " + std::to_string(headerLine) + ", field " + std::to_string(c + 1) + ": " +
               (i == kN ? "unknown column \"" : "the column appears twice: \"") + (*header)[c] + "\"";
      return false;
    }
    seen[i] = true;
    (*column)[c] = i;
  }
  for (size_t i = 0; i < kN; ++i) {
    if (!seen[i]) {
      *error = "line " + std::to_string(headerLine) + ": the header has no column \"" + kRowFields[i].name + "\"";
      return false;
    }
  }
  return true;
}

// The rows after the header, each with one field per column.
bool readCsvRows(const std::string& text, size_t* pos, int* line, const Strings& header,
                 const std::vector<size_t>& column, std::vector<Measurement>* ms, std::string* error) {
  Strings fields;
  while (*pos < text.size()) {
    const int recordLine = *line;
    const bool blank = text[*pos] == '\n' || text.compare(*pos, 2, "\r\n") == 0;
    if (!readCsvRecord(text, pos, line, &fields, error)) return false;
    if (blank) continue;  // an editor's trailing empty line
    if (fields.size() != header.size()) {
      *error = "line " + std::to_string(recordLine) + ": the row has " + std::to_string(fields.size()) +
               " fields but the header has " + std::to_string(header.size());
      return false;
    }
    Measurement m;
    for (size_t c = 0; c < fields.size(); ++c) {
      std::string why;
      if (!setScalar(&m, kRowFields[column[c]].member, fields[c], &why)) {
        *error = "line " + std::to_string(recordLine) + ", field " + std::to_string(c + 1) + " (" + header[c] +
                 "): expected " + why + ", found \"" + fields[c] + "\"";
        return false;
      }
    }
    ms->push_back(std::move(m));
  }
  return true;
}

}  // namespace

std::string formatResultsJson(const RunSummary& run, const std::vector<Measurement>& rows) {
  std::string s = "{\n  \"summary\": {";
  for (size_t i = 0; i < countOf(kSummaryFields); ++i) {
    s += (i ? ",\n    " : "\n    ") + jsonField(run, kSummaryFields[i]);
  }
  s += "\n  },\n  \"rows\": [";
  for (size_t r = 0; r < rows.size(); ++r) {
    s += r ? ",\n    {" : "\n    {";
    for (size_t i = 0; i < countOf(kRowFields); ++i) s += (i ? ", " : "") + jsonField(rows[r], kRowFields[i]);
    s += "}";
  }
  s += rows.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return s;
}

bool parseResultsJson(const std::string& text, RunSummary* run, std::vector<Measurement>* rows, std::string* error) {
  std::string ignored;
  if (!error) error = &ignored;
  json::Value doc;
  if (!json::parse(text, &doc, error)) return false;
  if (doc.kind != json::Value::Kind::kObject) {
    *error = at(doc) + "expected an object {\"summary\": {...}, \"rows\": [...]}, found " + json::kindName(doc.kind);
    return false;
  }
  const json::Value* summary = nullptr;
  const json::Value* list = nullptr;
  for (const auto& [key, value] : doc.members) {
    if (key == "summary") {
      summary = &value;
    } else if (key == "rows") {
      list = &value;
    } else {
      *error = at(value) + "unknown key \"" + key + "\" (a results file has \"summary\" and \"rows\")";
      return false;
    }
  }
  if (!summary || !list) {
    *error = at(doc) + "the key \"" + (summary ? "rows" : "summary") + "\" is missing";
    return false;
  }
  RunSummary r;
  if (!readJsonObject(*summary, kSummaryFields, "summary", &r, error)) return false;
  if (list->kind != json::Value::Kind::kArray) {
    *error = at(*list) + "rows: expected an array, found " + json::kindName(list->kind);
    return false;
  }
  std::vector<Measurement> ms(list->items.size());
  for (size_t i = 0; i < ms.size(); ++i) {
    if (!readJsonObject(list->items[i], kRowFields, "rows[" + std::to_string(i) + "]", &ms[i], error)) return false;
  }
  *run = std::move(r);
  *rows = std::move(ms);
  return true;
}

std::string formatResultsCsv(const RunSummary& run, const std::vector<Measurement>& rows) {
  std::string s = std::string(kCsvMagic) + "\n";
  for (const Field<RunSummary>& f : kSummaryFields) {
    if (isList(f)) {
      for (const std::string& v : run.*std::get<Strings RunSummary::*>(f.member)) {
        s += std::string("# ") + f.item + "=" + escapeComment(v) + "\n";
      }
    } else {
      s += std::string("# ") + f.name + "=" + escapeComment(scalarText(run, f.member)) + "\n";
    }
  }
  for (size_t i = 0; i < countOf(kRowFields); ++i) s += (i ? "," : "") + std::string(kRowFields[i].name);
  s += "\n";
  for (const Measurement& m : rows) {
    for (size_t i = 0; i < countOf(kRowFields); ++i)
      s += (i ? "," : "") + csvField(scalarText(m, kRowFields[i].member));
    s += "\n";
  }
  return s;
}

bool parseResultsCsv(const std::string& text, RunSummary* run, std::vector<Measurement>* rows, std::string* error) {
  std::string ignored;
  if (!error) error = &ignored;
  size_t pos = 0;
  int line = 1;
  RunSummary r;
  if (!readCsvSummary(text, &pos, &line, &r, error)) return false;
  Strings header;
  std::vector<size_t> column;
  if (!readCsvHeader(text, &pos, &line, &header, &column, error)) return false;
  std::vector<Measurement> ms;
  if (!readCsvRows(text, &pos, &line, header, column, &ms, error)) return false;
  *run = std::move(r);
  *rows = std::move(ms);
  return true;
}

}  // namespace weft::perf
