// weft-perf's picture (plotResultsSvg in results.h): a hand-written SVG, so that a bare build can
// draw it. Two panels share a log2 size axis: bus bandwidth (linear, from 0) above, time per
// call (log10) below. One series per library, out-of-place solid and in-place dashed, in the
// Okabe-Ito palette (safe for colour-blind readers) with a distinct marker shape each; Weft is
// always blue with circles. The legend sits right of the panels, so it never covers a line.
//
// A run may hold several collectives, types and ops; the picture shows the first combination
// that has a measured row, and its subtitle names the others. Rows with a status (n/a, failed)
// are not drawn; a footnote says how many and why.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "perf/format.h"
#include "perf/results.h"

namespace weft::perf {
namespace {

// The page, in SVG user units (pixels).
constexpr double kWidth = 960;
constexpr double kLeft = 84;    // room for the y tick labels and the rotated axis title
constexpr double kPlotW = 630;  // both panels
constexpr double kLegendX = kLeft + kPlotW + 26;
constexpr double kLegendW = kWidth - kLegendX - 10;
constexpr double kPanelH = 240;
constexpr double kPanelGap = 64;  // room for the upper panel's tick labels
constexpr double kCharW = 0.6;    // a sans-serif character's width, in font sizes, for fitting text

const char* const kWeftColour = "#0072B2";
const char* const kPeerColours[] = {"#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000"};
enum class Marker { kCircle, kSquare, kTriangle, kDiamond, kTriangleDown };
constexpr int kMarkers = 5;

// Valid UTF-8 with every XML special escaped; bytes XML cannot hold become U+FFFD.
std::string xmlText(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size() && !(len == 2 && c < 0xc2);
    for (int k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (!ok) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (len == 1) {
      if (c == '&') {
        out += "&amp;";
      } else if (c == '<') {
        out += "&lt;";
      } else if (c == '>') {
        out += "&gt;";
      } else if (c == '"') {
        out += "&quot;";
      } else if (c == '\'') {
        out += "&apos;";
      } else if (c < 0x20) {
        out += c == '\t' ? " " : "\xEF\xBF\xBD";  // one line of text: no newlines either
      } else {
        out += static_cast<char>(c);
      }
    } else {
      out.append(s, i, len);
    }
    i += len;
  }
  return out;
}

size_t codePoints(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

// s cut (at a character boundary) with an ellipsis, to fit `width` pixels at `fontSize`.
std::string fit(const std::string& s, double width, double fontSize) {
  const size_t maxChars = static_cast<size_t>(std::max(4.0, width / (kCharW * fontSize)));
  if (codePoints(s) <= maxChars) return s;
  size_t n = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xc0) != 0x80 && ++n > maxChars - 1) break;
  }
  return s.substr(0, i) + "\xE2\x80\xA6";
}

std::string text(double x, double y, const std::string& s, const char* attrs = "") {
  return format("<text x=\"%.1f\" y=\"%.1f\"%s%s>", x, y, *attrs ? " " : "", attrs) + xmlText(s) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const char* attrs) {
  return format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" %s/>\n", x1, y1, x2, y2, attrs);
}

// "8 B", "1 KiB", "1.5 MiB": binary units, at most three significant digits.
std::string sizeLabel(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  return format("%.3g %s", bytes, units[u]);
}

// 10^e microseconds as "1 µs", "100 µs", "10 ms", "1 s".
std::string timeLabel(int e) {
  if (e < 0) return format("%g µs", std::pow(10.0, e));
  if (e < 3) return format("%.0f µs", std::pow(10.0, e));
  if (e < 6) return format("%.0f ms", std::pow(10.0, e - 3));
  return format("%.0f s", std::pow(10.0, e - 6));
}

// A tooltip's number: NaN and infinities say so in words (they are never coordinates).
std::string valueText(double v, const char* unit) {
  if (std::isnan(v)) return std::string("no value for ") + unit;
  if (std::isinf(v)) return std::string(v > 0 ? "infinite " : "-infinite ") + unit;
  return format("%.4g %s", v, unit);
}

// A marker centred on (x, y); `tooltip`, when given, becomes its <title> (shown on hover).
std::string markerShape(Marker m, double x, double y, const std::string& paint, const std::string& tooltip = "") {
  const double r = 3.6;
  std::string tag = "polygon", shape;
  switch (m) {
    case Marker::kCircle:
      tag = "circle";
      shape = format("cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"", x, y, r);
      break;
    case Marker::kSquare:
      tag = "rect";
      shape = format("x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"", x - r, y - r, 2 * r, 2 * r);
      break;
    case Marker::kTriangle:
      shape = format("points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"", x, y - 1.2 * r, x - 1.1 * r, y + 0.8 * r, x + 1.1 * r,
                     y + 0.8 * r);
      break;
    case Marker::kDiamond:
      shape = format("points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\"", x, y - 1.3 * r, x + 1.1 * r, y, x,
                     y + 1.3 * r, x - 1.1 * r, y);
      break;
    case Marker::kTriangleDown:
      shape = format("points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"", x, y + 1.2 * r, x - 1.1 * r, y - 0.8 * r, x + 1.1 * r,
                     y - 0.8 * r);
      break;
  }
  const std::string open = "<" + tag + " " + shape + " " + paint;
  if (tooltip.empty()) return open + "/>\n";
  return open + "><title>" + xmlText(tooltip) + "</title></" + tag + ">\n";
}

// One library's rows of the combination on show, out-of-place [0] and in-place [1], sorted by
// size with one row per size.
struct Series {
  std::string library;
  std::string colour;
  Marker marker = Marker::kCircle;
  std::vector<const Measurement*> placed[2];
  bool empty() const { return placed[0].empty() && placed[1].empty(); }
};

// A y axis: maps a value to a pixel row and lists its labelled and faint grid lines.
struct Axis {
  bool log = false;
  double lo = 0, hi = 1;  // log: decades
  double top = 0;
  std::vector<std::pair<double, std::string>> ticks;
  std::vector<double> minor;
  double y(double v) const {
    const double t = log ? (std::log10(v) - lo) / (hi - lo) : (v - lo) / (hi - lo);
    return top + kPanelH * (1 - t);
  }
};

Axis busBwAxis(double maxBw) {
  Axis a;
  const double top = maxBw > 0 ? maxBw * 1.05 : 1;
  const double raw = top / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  int decimals = 0;
  while (decimals < 6 &&
         std::fabs(step * std::pow(10.0, decimals) - std::round(step * std::pow(10.0, decimals))) > 1e-9)
    ++decimals;
  const int n = static_cast<int>(std::ceil(top / step - 1e-9));
  a.hi = n * step;
  for (int i = 0; i <= n; ++i) a.ticks.emplace_back(i * step, format("%.*f", decimals, i * step));
  return a;
}

Axis timeAxis(double minUs, double maxUs) {
  Axis a;
  a.log = true;
  a.lo = std::floor(std::log10(minUs));
  a.hi = std::ceil(std::log10(maxUs));
  if (a.hi <= a.lo) a.hi = a.lo + 1;
  const int decades = static_cast<int>(a.hi - a.lo);
  const int every = decades > 8 ? 2 : 1;  // keep labels at least ~25 px apart
  for (int e = static_cast<int>(a.lo); e <= static_cast<int>(a.hi); ++e) {
    if ((e - static_cast<int>(a.lo)) % every == 0) a.ticks.emplace_back(std::pow(10.0, e), timeLabel(e));
    if (decades <= 5 && e < a.hi) {
      for (int m = 2; m <= 9; ++m) a.minor.push_back(m * std::pow(10.0, e));
    }
  }
  return a;
}

// The size axis: whole powers of two around the data, padded so that end markers stay inside,
// labelled every `stride` powers.
struct SizeAxis {
  int lo = 3, hi = 20;
  int stride = 1;
  double x(size_t bytes) const { return at(std::log2(static_cast<double>(bytes))); }
  double at(double log2Bytes) const {
    const double pad = 0.3;
    return kLeft + kPlotW * (log2Bytes - lo + pad) / (hi - lo + 2 * pad);
  }
};

bool drawable(const Measurement& m, bool timePanel) {
  if (timePanel) return std::isfinite(m.timeUs) && m.timeUs > 0;
  return std::isfinite(m.busBw) && m.busBw >= 0;
}

std::string joinTop(const std::vector<std::string>& items, size_t keep) {
  std::string s;
  for (size_t i = 0; i < items.size() && i < keep; ++i) s += (i ? ", " : "") + items[i];
  if (items.size() > keep) s += format(" and %zu more", items.size() - keep);
  return s;
}

std::string plural(int n, const char* noun) { return format("%d %s%s", n, noun, n == 1 ? "" : "s"); }

// Everything the drawing needs, gathered from the rows.
struct Plot {
  std::string collective, type, op;  // the combination on show
  std::vector<std::string> others;   // the combinations in the data that are not
  std::vector<Series> series;        // every library named, in legend order
  SizeAxis x;
  bool haveX = false, haveTime = false, anyInPlace = false;
  double maxBw = 0, minTime = 0, maxTime = 0;
  std::vector<std::string> notes;  // footnotes
};

// Libraries in the summary's order, then any only the rows name; Weft keeps its colour and
// the peers take the palette and the marker shapes in turn.
std::vector<Series> makeSeries(const RunSummary& run, const std::vector<Measurement>& rows) {
  std::vector<Series> series;
  auto add = [&](const std::string& lib) {
    for (const Series& s : series) {
      if (s.library == lib) return;
    }
    series.emplace_back();
    series.back().library = lib;
  };
  for (const std::string& lib : run.libraries) add(lib);
  for (const Measurement& m : rows) add(m.library);
  int peer = 0;
  for (Series& s : series) {
    if (s.library == "weft") {
      s.colour = kWeftColour;
      s.marker = Marker::kCircle;
    } else {
      s.colour = kPeerColours[peer % std::size(kPeerColours)];
      s.marker = static_cast<Marker>(1 + peer % (kMarkers - 1));
      ++peer;
    }
  }
  return series;
}

// Whether row m is of the combination on show.
bool shownIn(const Plot& p, const Measurement& m) {
  return m.collective == p.collective && m.type == p.type && m.op == p.op;
}

// The combination on show: the first that has a measured row (else the first row's); the
// others in the data are named in p->others.
void chooseCombination(const RunSummary& run, const std::vector<Measurement>& rows, Plot* p) {
  const Measurement* first = nullptr;
  for (const Measurement& m : rows) {
    if (m.status.empty() && m.bytes > 0) {
      first = &m;
      break;
    }
  }
  if (!first && !rows.empty()) first = &rows[0];
  p->collective = first ? first->collective : run.collective;
  p->type = first ? first->type : "";
  p->op = first ? first->op : "";
  for (const Measurement& m : rows) {
    if (shownIn(*p, m)) continue;
    const std::string c =
        (m.collective != p->collective ? m.collective + " · " : "") + m.type + (m.op != "none" ? " · " + m.op : "");
    if (std::find(p->others.begin(), p->others.end(), c) == p->others.end()) p->others.push_back(c);
  }
}

// The rows of the combination on show that are not drawn (a status, or size 0), and the drawn
// ones with wrong elements, for the footnotes.
struct Skips {
  std::map<std::string, int> skipped;  // "library: status" -> rows
  std::vector<std::string> skippedOrder;
  int zeroSize = 0, wrongRows = 0;
};

// Places the rows on show in their series (one point per size and placement, sorted by size),
// and finds the ranges of the data: sizes (log2, *minX and *maxX), bandwidth and time.
void placeRows(const std::vector<Measurement>& rows, Plot* p, Skips* skips, double* minX, double* maxX) {
  for (const Measurement& m : rows) {
    if (!shownIn(*p, m)) continue;
    if (!m.status.empty()) {
      const std::string reason = m.library + ": " + m.status;
      if (!skips->skipped[reason]++) skips->skippedOrder.push_back(reason);
      continue;
    }
    if (m.bytes == 0) {
      ++skips->zeroSize;
      continue;
    }
    Series& s =
        *std::find_if(p->series.begin(), p->series.end(), [&](const Series& t) { return t.library == m.library; });
    std::vector<const Measurement*>& placed = s.placed[m.inPlace ? 1 : 0];
    // One point per size (the other roots of a rooted collective are not drawn).
    if (std::any_of(placed.begin(), placed.end(), [&](const Measurement* q) { return q->bytes == m.bytes; })) continue;
    placed.push_back(&m);
    p->anyInPlace |= m.inPlace;
    skips->wrongRows += m.wrong > 0;
    const double x = std::log2(static_cast<double>(m.bytes));
    *minX = p->haveX ? std::min(*minX, x) : x;
    *maxX = p->haveX ? std::max(*maxX, x) : x;
    p->haveX = true;
    if (drawable(m, false)) p->maxBw = std::max(p->maxBw, m.busBw);
    if (drawable(m, true)) {
      p->minTime = p->haveTime ? std::min(p->minTime, m.timeUs) : m.timeUs;
      p->maxTime = p->haveTime ? std::max(p->maxTime, m.timeUs) : m.timeUs;
      p->haveTime = true;
    }
  }
  for (Series& s : p->series) {
    for (auto& placed : s.placed) {
      std::sort(placed.begin(), placed.end(),
                [](const Measurement* a, const Measurement* b) { return a->bytes < b->bytes; });
    }
  }
}

// The size axis around log2 sizes minX..maxX, with a label stride that fits the width.
void fitSizeAxis(double minX, double maxX, Plot* p) {
  if (p->haveX) {
    p->x.lo = static_cast<int>(std::floor(minX));
    p->x.hi = static_cast<int>(std::ceil(maxX));
  }
  if (p->x.hi <= p->x.lo) {
    p->x.lo -= 1;
    p->x.hi += 1;
  }
  // Labels such as "256 KiB" need ~60 px each.
  for (int s : {1, 2, 4, 5, 10, 20}) {
    p->x.stride = s;
    if ((p->x.hi - p->x.lo) / s + 1 <= static_cast<int>(kPlotW / 62)) break;
  }
}

// The footnotes: rows not drawn, points with wrong elements, the run's notes; at most 8 lines.
void addNotes(const RunSummary& run, const Skips& skips, Plot* p) {
  for (const std::string& reason : skips.skippedOrder)
    p->notes.push_back("not drawn: " + plural(skips.skipped.at(reason), "row") + ", " + reason);
  if (skips.zeroSize)
    p->notes.push_back("not drawn: " + plural(skips.zeroSize, "row") + " of size 0 (no place on a log axis)");
  if (skips.wrongRows)
    p->notes.push_back(plural(skips.wrongRows, "drawn point") + " had wrong elements (marked with a red ring)");
  for (const std::string& n : run.notes) p->notes.push_back("note: " + n);
  if (p->notes.size() > 8) {
    const size_t extra = p->notes.size() - 7;
    p->notes.resize(7);
    p->notes.push_back(format("... and %zu more (see the CSV or JSON file)", extra));
  }
}

Plot gather(const RunSummary& run, const std::vector<Measurement>& rows) {
  Plot p;
  chooseCombination(run, rows, &p);
  p.series = makeSeries(run, rows);
  Skips skips;
  double minX = 0, maxX = 0;
  placeRows(rows, &p, &skips, &minX, &maxX);
  fitSizeAxis(minX, maxX, &p);
  addNotes(run, skips, &p);
  return p;
}

// One library in one panel: a polyline per placement, and a marker (with a tooltip) per point.
std::string drawSeries(const Series& s, bool timePanel, const SizeAxis& xAxis, const Axis& yAxis) {
  std::string svg = "<g class=\"series\" data-library=\"" + xmlText(s.library) + "\">\n";
  for (int inPlace = 0; inPlace < 2; ++inPlace) {
    std::string points, markers;
    const std::string paint = inPlace ? "fill=\"#ffffff\" stroke=\"" + s.colour + "\" stroke-width=\"1.5\""
                                      : "fill=\"" + s.colour + "\" stroke=\"none\"";
    for (const Measurement* m : s.placed[inPlace]) {
      if (!drawable(*m, timePanel)) continue;
      const double x = xAxis.x(m->bytes);
      const double y = yAxis.y(timePanel ? m->timeUs : m->busBw);
      points += format("%s%.1f,%.1f", points.empty() ? "" : " ", x, y);
      if (m->wrong > 0) {
        markers += format(
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"none\" stroke=\"#cc0000\" stroke-width=\"1.5\"/>\n", x, y);
      }
      const std::string tip = s.library + " · " + sizeLabel(static_cast<double>(m->bytes)) + " · " +
                              (inPlace ? "in-place" : "out-of-place") + ": " + valueText(m->busBw, "GB/s busbw") +
                              ", " + valueText(m->timeUs, "µs") +
                              (m->wrong > 0 ? format(", %lld wrong", static_cast<long long>(m->wrong)) : "");
      markers += markerShape(s.marker, x, y, paint, tip);
    }
    if (points.empty()) continue;
    svg += "<polyline data-library=\"" + xmlText(s.library) + "\" data-placement=\"" +
           (inPlace ? "in-place" : "out-of-place") + "\" points=\"" + points + "\" fill=\"none\" stroke=\"" + s.colour +
           "\" stroke-width=\"2\" stroke-linejoin=\"round\"" + (inPlace ? " stroke-dasharray=\"7 4\"" : "") + "/>\n";
    svg += markers;
  }
  return svg + "</g>\n";
}

// A panel: background, grid, tick labels on both axes, the rotated y title, then the series.
std::string drawPanel(const Plot& p, bool timePanel, double top) {
  Axis yAxis = timePanel ? timeAxis(p.haveTime ? p.minTime : 1, p.haveTime ? p.maxTime : 1000) : busBwAxis(p.maxBw);
  yAxis.top = top;
  const double right = kLeft + kPlotW, bottom = top + kPanelH;
  std::string svg = format("<g class=\"panel\" data-panel=\"%s\">\n", timePanel ? "time" : "busbw");
  svg += format("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fafafa\" stroke=\"none\"/>\n",
                kLeft, top, kPlotW, kPanelH);
  for (double v : yAxis.minor) svg += line(kLeft, yAxis.y(v), right, yAxis.y(v), "stroke=\"#eeeeee\"");
  for (int e = p.x.lo; e <= p.x.hi; ++e) {
    const bool labelled = e % p.x.stride == 0;
    svg += line(p.x.at(e), top, p.x.at(e), bottom, labelled ? "stroke=\"#d4d4d4\"" : "stroke=\"#eeeeee\"");
    if (labelled) {
      svg += text(p.x.at(e), bottom + 17, sizeLabel(std::ldexp(1.0, e)), "class=\"xtick\" text-anchor=\"middle\"");
    }
  }
  for (const auto& [v, label] : yAxis.ticks) {
    svg += line(kLeft, yAxis.y(v), right, yAxis.y(v), "stroke=\"#d4d4d4\"");
    svg += text(kLeft - 7, yAxis.y(v) + 4, label, "class=\"ytick\" text-anchor=\"end\"");
  }
  svg += format("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#888888\"/>\n",
                kLeft, top, kPlotW, kPanelH);
  svg += format(
             "<text class=\"ytitle\" x=\"0\" y=\"0\" text-anchor=\"middle\" font-size=\"13\" "
             "transform=\"translate(22 %.1f) rotate(-90)\">",
             top + kPanelH / 2) +
         xmlText(timePanel ? "time per call (µs, log scale)" : "bus bandwidth (GB/s)") + "</text>\n";
  if (!p.haveX) {
    svg += text(kLeft + kPlotW / 2, top + kPanelH / 2, "no measurements to draw",
                "text-anchor=\"middle\" fill=\"#888888\" font-size=\"14\"");
  }
  for (const Series& s : p.series) {
    if (!s.empty()) svg += drawSeries(s, timePanel, p.x, yAxis);
  }
  return svg + "</g>\n";
}

// The legend, right of the upper panel: every library (greyed when it has no rows), then what
// solid and dashed mean when there are in-place rows.
std::string drawLegend(const Plot& p, double top) {
  double y = top + 4;
  std::string svg = "<g class=\"legend\">\n" + text(kLegendX, y + 4, "library", "font-weight=\"bold\"");
  y += 24;
  for (const Series& s : p.series) {
    if (s.empty()) {
      svg += text(kLegendX + 38, y + 4, fit(s.library + " (no data)", kLegendW - 38, 12), "fill=\"#999999\"");
    } else {
      svg += line(kLegendX, y, kLegendX + 28, y, ("stroke=\"" + s.colour + "\" stroke-width=\"2\"").c_str());
      svg += markerShape(s.marker, kLegendX + 14, y, "fill=\"" + s.colour + "\" stroke=\"none\"");
      svg += text(kLegendX + 38, y + 4, fit(s.library, kLegendW - 38, 12));
    }
    y += 22;
  }
  if (p.anyInPlace) {
    y += 8;
    svg += line(kLegendX, y, kLegendX + 28, y, "stroke=\"#555555\" stroke-width=\"2\"");
    svg += text(kLegendX + 38, y + 4, "out-of-place");
    y += 22;
    svg += line(kLegendX, y, kLegendX + 28, y, "stroke=\"#555555\" stroke-width=\"2\" stroke-dasharray=\"7 4\"");
    svg += markerShape(Marker::kCircle, kLegendX + 14, y, "fill=\"#ffffff\" stroke=\"#555555\" stroke-width=\"1.5\"");
    svg += text(kLegendX + 38, y + 4, "in-place");
  }
  return svg + "</g>\n";
}

}  // namespace

std::string plotResultsSvg(const RunSummary& run, const std::vector<Measurement>& rows) {
  const Plot p = gather(run, rows);

  // "allreduce · float · sum · 2 ranks · host vm"; the op is left out for collectives that
  // do not reduce.
  std::string title = p.collective.empty() ? "weft-perf" : p.collective;
  if (!p.type.empty()) title += " · " + p.type;
  if (!p.op.empty() && p.op != "none") title += " · " + p.op;
  title += " · " + plural(run.nranks, "rank");
  if (!run.host.empty()) title += " · host " + run.host;
  std::string subtitle;
  for (const std::string& part : {run.date, run.topology, run.memory.empty() ? "" : run.memory + " memory",
                                  run.weftVersion.empty() ? "" : "weft " + run.weftVersion}) {
    if (!part.empty()) subtitle += (subtitle.empty() ? "" : " · ") + part;
  }
  std::string subtitle2;
  if (!p.others.empty()) {
    subtitle2 = "showing " + p.type + (p.op != "none" && !p.op.empty() ? " · " + p.op : "") +
                "; also in the data, not drawn: " + joinTop(p.others, 4);
  }

  const double titleY = 30, subY = titleY + 22;
  const double top1 = subY + (subtitle2.empty() ? 0 : 18) + 30;
  const double top2 = top1 + kPanelH + kPanelGap;
  const double xTitleY = top2 + kPanelH + 44;
  const double footY = xTitleY + 30;
  const double height = footY + 18 * p.notes.size() + 8;
  const double textW = kWidth - kLeft - 10;

  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\" fill=\"#222222\">\n",
      kWidth, height, kWidth, height);
  svg += format("<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n", kWidth, height);
  svg += text(kLeft, titleY, fit(title, textW, 18), "class=\"title\" font-size=\"18\" font-weight=\"bold\"");
  svg += text(kLeft, subY, fit(subtitle, textW, 12), "class=\"subtitle\" fill=\"#555555\"");
  if (!subtitle2.empty())
    svg += text(kLeft, subY + 18, fit(subtitle2, textW, 12), "class=\"subtitle\" fill=\"#555555\"");
  svg += drawPanel(p, false, top1);
  svg += drawPanel(p, true, top2);
  svg += text(kLeft + kPlotW / 2, xTitleY, "message size (bytes, log2 scale)",
              "class=\"xtitle\" text-anchor=\"middle\" font-size=\"13\"");
  svg += drawLegend(p, top1);
  for (size_t i = 0; i < p.notes.size(); ++i) {
    svg +=
        text(kLeft, footY + 18 * i, fit(p.notes[i], textW, 11), "class=\"footnote\" font-size=\"11\" fill=\"#555555\"");
  }
  return svg + "</svg>\n";
}

}  // namespace weft::perf
