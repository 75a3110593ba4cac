// weft-perf's results files as a reader meets them, for the command-line tests: reads --json,
// --csv and --plot files back through results.h's strict parsers and checks what a run of
// weft-perf must have put there.
//
//   perf_results_check LIBS JSON CSV SVG
//
// LIBS: the libraries expected, in column order ("weft,gloo"); a file given as "-" is not
// checked. Exit status 0 when every check passes, 1 with the reasons on stderr otherwise.
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "perf/results.h"

namespace {

using weft::perf::Measurement;
using weft::perf::RunSummary;

int gFailures = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "perf_results_check: %s\n", what.c_str());
  ++gFailures;
}

bool readFile(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *text = s.str();
  return true;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

// What every file of one run holds: the summary and a measured, correct row per library.
void checkRun(const std::string& file, const RunSummary& run, const std::vector<Measurement>& rows,
              const std::vector<std::string>& libs) {
  expect(run.libraries == libs, file + ": the libraries are not the ones expected");
  expect(run.memory == "host", file + ": memory is '" + run.memory + "', not host");
  expect(run.nranks >= 1, file + ": no rank count");
  expect(run.topology.find("rank") != std::string::npos, file + ": topology '" + run.topology + "'");
  expect(!run.date.empty() && run.date.back() == 'Z', file + ": date '" + run.date + "' is not UTC");
  expect(!run.weftVersion.empty() && !run.host.empty(), file + ": no Weft version or host");
  std::set<std::string> seen;
  for (const Measurement& m : rows) {
    seen.insert(m.library);
    if (!m.status.empty()) continue;
    expect(m.timeUs > 0 && m.busBw >= 0, file + ": a " + m.library + " row has no time");
    expect(m.wrong == 0, file + ": " + m.library + " has " + std::to_string(m.wrong) + " wrong elements");
  }
  for (const std::string& l : libs) expect(seen.count(l) == 1, file + ": no row of " + l);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s LIBS JSON CSV SVG\n", argv[0]);
    return 2;
  }
  const std::vector<std::string> libs = split(argv[1]);
  std::string text, error;
  size_t jsonRows = 0;
  bool haveJson = false;
  if (std::string(argv[2]) != "-") {
    RunSummary run;
    std::vector<Measurement> rows;
    expect(readFile(argv[2], &text), std::string("cannot read ") + argv[2]);
    expect(parseResultsJson(text, &run, &rows, &error), std::string(argv[2]) + ": " + error);
    checkRun(argv[2], run, rows, libs);
    jsonRows = rows.size();
    haveJson = true;
  }
  if (std::string(argv[3]) != "-") {
    RunSummary run;
    std::vector<Measurement> rows;
    expect(readFile(argv[3], &text), std::string("cannot read ") + argv[3]);
    expect(parseResultsCsv(text, &run, &rows, &error), std::string(argv[3]) + ": " + error);
    checkRun(argv[3], run, rows, libs);
    expect(!haveJson || rows.size() == jsonRows, "the CSV and the JSON hold different numbers of rows");
  }
  if (std::string(argv[4]) != "-") {
    expect(readFile(argv[4], &text), std::string("cannot read ") + argv[4]);
    expect(text.find("<svg") != std::string::npos, std::string(argv[4]) + ": no <svg> element");
    expect(text.find("</svg>") != std::string::npos, std::string(argv[4]) + ": the <svg> element is not closed");
    for (const std::string& l : libs)
      expect(text.find(l) != std::string::npos, std::string(argv[4]) + ": the legend lacks " + l);
  }
  if (gFailures == 0) std::printf("perf_results_check: ok (%zu rows)\n", jsonRows);
  return gFailures ? 1 : 0;
}
