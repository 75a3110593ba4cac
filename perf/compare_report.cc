// Formatting of the comparison table (see compare_report.h). Every column is 11 characters
// wide and right-aligned, so rows line up with the two header lines whatever the libraries.
#include "perf/compare_report.h"

#include <cstdio>

#include "perf/report.h"

namespace weft::perf {
namespace {

constexpr int kWidth = 11;

std::string cell(const std::string& text) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "  %*s", kWidth, text.c_str());
  return buf;
}

std::string number(const char* fmt, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// The time column: the nccl-tests precision (formatTime), without its padding.
std::string timeText(double us) {
  std::string s = formatTime(us);
  return s.substr(s.find_first_not_of(' '));
}

std::string ratioText(double r) { return r > 0 ? number("%.3f", r) : "-"; }

std::string line(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s + "\n";
}

}  // namespace

bool sampleIsClean(const LibSample& s) { return s.state == LibState::kRan && s.seconds > 0 && s.wrong == 0; }

double speedRatio(const LibSample& subject, const LibSample& other) {
  if (!sampleIsClean(subject) || !sampleIsClean(other)) return 0;
  return other.seconds / subject.seconds;
}

int fastestPeer(const CompareRow& row) {
  int best = -1;
  for (size_t i = 1; i < row.libs.size(); ++i) {
    if (!sampleIsClean(row.libs[i])) continue;
    if (best < 0 || row.libs[i].seconds < row.libs[static_cast<size_t>(best)].seconds) best = static_cast<int>(i);
  }
  return best;
}

bool parseLibList(const std::string& text, const std::vector<std::string>& known, std::vector<std::string>* libs,
                  std::string* error) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool isKnown = false;
    for (const std::string& k : known) isKnown = isKnown || k == name;
    if (!isKnown) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      *error = name.empty() ? "an empty name in the library list '" + text + "'"
                            : "unknown library '" + name + "' (known: " + list + ")";
      return false;
    }
    for (const std::string& seen : out) {
      if (seen == name) {
        *error = "library '" + name + "' is named twice in '" + text + "'";
        return false;
      }
    }
    out.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  *libs = out;
  return true;
}

std::string formatCompareHeader(const std::vector<std::string>& names) {
  std::string top = "#" + cell("size").substr(1);
  std::string bottom = "#" + cell("(B)").substr(1);
  for (const std::string& n : names) {
    top += cell(n) + cell(n);
    bottom += cell("time (us)") + cell("busbw GB/s");
  }
  if (names.size() >= 2) {
    for (size_t i = 1; i < names.size(); ++i) {
      top += cell(names[0] + "/" + names[i]);
      bottom += cell("speed");
    }
    if (names.size() >= 3) {
      top += cell(names[0] + "/best");
      bottom += cell("speed");
    }
  }
  top += "  check";
  return line(top) + line(bottom);
}

std::string formatCompareRow(const CompareRow& row, const std::vector<std::string>& names, Collective coll,
                             int nranks) {
  char size[32];
  std::snprintf(size, sizeof size, "%*zu", kWidth + 2, row.bytes);
  std::string s = size;
  for (const LibSample& l : row.libs) {
    switch (l.state) {
      case LibState::kRan: {
        double algBw = 0, busBw = 0;
        bandwidth(coll, row.paramCount, row.typeSize, nranks, l.seconds, &algBw, &busBw);
        s += cell(timeText(l.seconds * 1e6)) + cell(number("%.3f", busBw));
        break;
      }
      case LibState::kFailed:
        s += cell("failed") + cell("-");
        break;
      case LibState::kUnsupported:
        s += cell("n/a") + cell("n/a");
        break;
    }
  }
  if (row.libs.size() >= 2) {
    for (size_t i = 1; i < row.libs.size(); ++i) s += cell(ratioText(speedRatio(row.libs[0], row.libs[i])));
    if (row.libs.size() >= 3) {
      const int best = fastestPeer(row);
      s += cell(best < 0 ? "-" : ratioText(speedRatio(row.libs[0], row.libs[static_cast<size_t>(best)])));
    }
  }
  std::string wrong;
  bool anyRan = false;
  for (size_t i = 0; i < row.libs.size(); ++i) {
    const LibSample& l = row.libs[i];
    if (l.state != LibState::kRan) continue;
    anyRan = true;
    if (l.wrong != 0) wrong += " " + (i < names.size() ? names[i] : std::to_string(i)) + "=" + std::to_string(l.wrong);
  }
  s += "  " + std::string(!anyRan ? "-" : wrong.empty() ? "ok" : "WRONG" + wrong);
  return line(s);
}

}  // namespace weft::perf
