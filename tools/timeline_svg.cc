// The timeline drawn (timeline_svg.h). Layout: a label column, then the time axis across; rows
// in rank order. A rank's wait is drawn over its bar: at level 1, the time it spent in a call
// before the last rank entered it (it waited for that rank); at level 2, its executor's own wait
// events as well.
#include "timeline_svg.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

namespace weft {
namespace tools {
namespace {

constexpr double kWidth = 1200;
constexpr double kLabelWidth = 200;
constexpr double kRightMargin = 24;
constexpr double kTop = 64;
constexpr double kRowHeight = 34;
constexpr double kBarHeight = 22;
constexpr double kCharWidth = 6.6;  // of the 11 px sans-serif labels, to decide whether one fits
const char* const kPalette[] = {"#4e79a7", "#59a14f", "#f28e2b", "#76b7b2", "#edc948", "#b07aa1", "#9c755f", "#bab0ac"};
const char* const kStragglerColour = "#d62728";

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out.push_back(c);
  }
  return out;
}

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", v);
  return text;
}

std::string duration(int64_t ns) {
  char text[32];
  if (ns < 1000000) std::snprintf(text, sizeof(text), "%.1f us", static_cast<double>(ns) / 1e3);
  else if (ns < 1000000000) std::snprintf(text, sizeof(text), "%.3f ms", static_cast<double>(ns) / 1e6);
  else std::snprintf(text, sizeof(text), "%.3f s", static_cast<double>(ns) / 1e9);
  return text;
}

struct Axis {
  int64_t t0 = 0;
  int64_t span = 1;
  double x(int64_t t) const {
    return kLabelWidth + static_cast<double>(t - t0) * (kWidth - kLabelWidth - kRightMargin) / static_cast<double>(span);
  }
};

Axis axisOf(const std::vector<RankTimeline>& ranks) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& r : ranks) {
    for (const auto& c : r.calls) lo = std::min(lo, c.startNs), hi = std::max(hi, c.endNs);
    for (const auto& w : r.waits) lo = std::min(lo, w.startNs), hi = std::max(hi, w.endNs);
  }
  Axis a;
  if (lo > hi) return a;
  a.t0 = lo;
  a.span = std::max<int64_t>(hi - lo, 1);
  return a;
}

using CallKey = std::tuple<std::string, int64_t, std::string>;

// Per call, when its last rank entered it.
std::map<CallKey, int64_t> lastEntries(const std::vector<RankTimeline>& ranks) {
  std::map<CallKey, int64_t> last;
  for (const auto& r : ranks) {
    for (const auto& c : r.calls) {
      auto [it, added] = last.emplace(CallKey{c.comm, c.call, c.name}, c.startNs);
      if (!added) it->second = std::max(it->second, c.startNs);
    }
  }
  return last;
}

void drawAxis(std::string* out, const Axis& axis, double bottom) {
  const int64_t step = tickStepNs(axis.span);
  for (int64_t t = 0; t <= axis.span; t += step) {
    const double x = axis.x(axis.t0 + t);
    *out += "<line class=\"tick\" x1=\"" + num(x) + "\" y1=\"" + num(kTop - 8) + "\" x2=\"" + num(x) + "\" y2=\"" +
            num(bottom) + "\" stroke=\"#dddddd\"/>\n";
    *out += "<text x=\"" + num(x) + "\" y=\"" + num(kTop - 12) + "\" text-anchor=\"middle\" font-size=\"11\">" +
            tickLabel(t, step) + "</text>\n";
  }
}

void drawBar(std::string* out, const RankTimeline& r, const TimelineCall& c, const Axis& axis, double y,
             const std::map<std::string, size_t>& colours, bool straggler, int64_t lastEntry) {
  const double x0 = axis.x(c.startNs), x1 = std::max(axis.x(c.endNs), x0 + 1);
  const std::string label = c.name + " #" + std::to_string(c.call);
  const char* fill = kPalette[colours.at(c.name) % (sizeof(kPalette) / sizeof(kPalette[0]))];
  *out += "<g class=\"call\" data-rank=\"" + std::to_string(r.rank) + "\" data-call=\"" + std::to_string(c.call) +
          "\"><title>" + escape("rank " + std::to_string(r.rank) + ": " + label + ", " + std::to_string(c.bytes) +
                                " B" + (c.algo.empty() ? "" : ", " + c.algo) + ", " +
                                duration(c.endNs - c.startNs) + (c.result.empty() ? "" : ", " + c.result)) +
          "</title>";
  *out += "<rect x=\"" + num(x0) + "\" y=\"" + num(y) + "\" width=\"" + num(x1 - x0) + "\" height=\"" +
          num(kBarHeight) + "\" fill=\"" + fill + "\"" +
          (straggler ? std::string(" stroke=\"") + kStragglerColour + "\" stroke-width=\"2\"" : "") + "/>";
  // The part of the call spent before the last rank came: this rank waited for it.
  const int64_t waitEnd = std::min(lastEntry, c.endNs);
  if (waitEnd > c.startNs) {
    *out += "<rect class=\"wait\" x=\"" + num(x0) + "\" y=\"" + num(y) + "\" width=\"" +
            num(std::max(axis.x(waitEnd) - x0, 0.5)) + "\" height=\"" + num(kBarHeight) +
            "\" fill=\"#000000\" fill-opacity=\"0.28\"/>";
  }
  if (x1 - x0 >= kCharWidth * static_cast<double>(label.size()) + 6) {
    *out += "<text x=\"" + num(x0 + 3) + "\" y=\"" + num(y + 15) + "\" font-size=\"11\" fill=\"#ffffff\">" +
            escape(label) + "</text>";
  }
  *out += "</g>\n";
}

void drawRow(std::string* out, const RankTimeline& r, size_t row, const Axis& axis, const Straggler& s,
             const std::map<std::string, size_t>& colours, const std::map<CallKey, int64_t>& last) {
  const bool straggler = r.rank == s.rank;
  const double y = kTop + static_cast<double>(row) * kRowHeight;
  const char* background = straggler ? "#fde3e3" : row % 2 ? "#ffffff" : "#f4f4f4";
  *out += "<rect class=\"row\" data-rank=\"" + std::to_string(r.rank) + "\" x=\"0\" y=\"" + num(y) + "\" width=\"" +
          num(kWidth) + "\" height=\"" + num(kRowHeight) + "\" fill=\"" + background + "\"/>\n";
  const std::string label = r.label.empty() ? "rank " + std::to_string(r.rank) : r.label;
  *out += "<text x=\"8\" y=\"" + num(y + 21) + "\" font-size=\"12\"" +
          (straggler ? std::string(" fill=\"") + kStragglerColour + "\" font-weight=\"bold\" class=\"straggler\"" : "") +
          ">" + escape(label) + (straggler ? " \xE2\x97\x80 straggler" : "") + "</text>\n";
  const double barY = y + (kRowHeight - kBarHeight) / 2;
  for (const auto& c : r.calls) {
    drawBar(out, r, c, axis, barY, colours, straggler, last.at(CallKey{c.comm, c.call, c.name}));
  }
  for (const auto& w : r.waits) {
    const double x0 = axis.x(w.startNs);
    *out += "<rect class=\"wait\" x=\"" + num(x0) + "\" y=\"" + num(barY + kBarHeight - 6) + "\" width=\"" +
            num(std::max(axis.x(w.endNs) - x0, 0.5)) + "\" height=\"6\" fill=\"#000000\" fill-opacity=\"0.45\"><title>" +
            escape("waited " + duration(w.endNs - w.startNs) + " for rank " + std::to_string(w.peer)) + "</title></rect>\n";
  }
}

void drawLegend(std::string* out, double y, const std::map<std::string, size_t>& colours, const Straggler& s) {
  double x = 8;
  for (const auto& [name, index] : colours) {
    *out += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"14\" height=\"14\" fill=\"" +
            kPalette[index % (sizeof(kPalette) / sizeof(kPalette[0]))] + "\"/><text x=\"" + num(x + 18) + "\" y=\"" +
            num(y + 12) + "\" font-size=\"12\">" + escape(name) + "</text>\n";
    x += 30 + kCharWidth * static_cast<double>(name.size());
  }
  *out += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"14\" height=\"14\" fill=\"#000000\" "
          "fill-opacity=\"0.35\"/><text x=\"" + num(x + 18) + "\" y=\"" + num(y + 12) +
          "\" font-size=\"12\">waiting (for a later rank; thin strip: the executor's own waits)</text>\n";
  if (s.rank < 0) return;
  *out += "<rect class=\"straggler-legend\" x=\"8\" y=\"" + num(y + 22) + "\" width=\"14\" height=\"14\" fill=\"#fde3e3\" "
          "stroke=\"" + kStragglerColour + "\" stroke-width=\"2\"/><text x=\"26\" y=\"" + num(y + 34) +
          "\" font-size=\"12\" fill=\"" + kStragglerColour + "\">" +
          escape("straggler: rank " + std::to_string(s.rank) + " entered its calls " + duration(s.lateNs) +
                 " after the first rank in all; the others waited for it (most in " + s.worstCall + ", " +
                 duration(s.worstLateNs) + ")") +
          "</text>\n";
}

}  // namespace

int64_t tickStepNs(int64_t spanNs) {
  const int64_t target = std::max<int64_t>(spanNs / 8, 1);
  for (int64_t p = 1;; p *= 10) {
    for (int64_t m : {1, 2, 5}) {
      if (m * p >= target) return m * p;
    }
    if (p > INT64_MAX / 100) return p;
  }
}

std::string tickLabel(int64_t ns, int64_t stepNs) {
  char text[32];
  if (stepNs >= 100000000) std::snprintf(text, sizeof(text), "%.1f s", static_cast<double>(ns) / 1e9);
  else if (stepNs >= 100000) std::snprintf(text, sizeof(text), "%g ms", static_cast<double>(ns) / 1e6);
  else if (stepNs >= 100) std::snprintf(text, sizeof(text), "%g us", static_cast<double>(ns) / 1e3);
  else std::snprintf(text, sizeof(text), "%lld ns", static_cast<long long>(ns));
  return text;
}

std::string timelineSvg(const std::vector<RankTimeline>& ranks, const Straggler& straggler) {
  const Axis axis = axisOf(ranks);
  std::map<std::string, size_t> colours;
  for (const auto& r : ranks) {
    for (const auto& c : r.calls) colours.emplace(c.name, colours.size());
  }
  const auto last = lastEntries(ranks);
  const double bottom = kTop + static_cast<double>(ranks.size()) * kRowHeight;
  const double height = bottom + 64;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    num(kWidth) + "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(kWidth) + " " + num(height) +
                    "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  out += "<text x=\"8\" y=\"20\" font-size=\"14\" font-weight=\"bold\">Weft timeline: " + std::to_string(ranks.size()) +
         " ranks, " + duration(axis.span) + "</text>\n";
  out += "<text x=\"" + num(kLabelWidth) + "\" y=\"36\" font-size=\"11\" fill=\"#555555\">time since the first call</text>\n";
  for (size_t i = 0; i < ranks.size(); ++i) drawRow(&out, ranks[i], i, axis, straggler, colours, last);
  drawAxis(&out, axis, bottom);
  drawLegend(&out, bottom + 12, colours, straggler);
  out += "</svg>\n";
  return out;
}

}  // namespace tools
}  // namespace weft
