// The --plot picture: well-formed XML (read back by a small strict XML reader written here), one
// series per library that has measurements, the title and axis labels a reader needs, points
// in size order, and the edge cases (one size, zero bandwidth, no rows, hostile strings).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "perf/results.h"

namespace weft::perf {
namespace {

// ---- a small strict XML reader -----------------------------------------------------------------

struct Element {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attrs;
  std::vector<Element> children;
  std::string text;  // the decoded character data directly inside

  const std::string* attr(const std::string& key) const {
    for (const auto& a : attrs) {
      if (a.first == key) return &a.second;
    }
    return nullptr;
  }
  std::string get(const std::string& key) const { return attr(key) ? *attr(key) : ""; }
  // All character data below, as a reader of the picture sees it.
  std::string allText() const {
    std::string s = text;
    for (const Element& c : children) s += c.allText();
    return s;
  }
};

class XmlReader {
 public:
  explicit XmlReader(const std::string& s) : s_(s) {}

  bool document(Element* root) {
    if (!validUtf8()) return false;
    if (s_.compare(0, 5, "<?xml") == 0) {
      const size_t end = s_.find("?>");
      if (end == std::string::npos) return fail("unterminated prolog");
      pos_ = end + 2;
    }
    space();
    if (!element(root, 0)) return false;
    space();
    return pos_ == s_.size() || fail("content after the root element");
  }
  const std::string& error() const { return error_; }

 private:
  bool fail(const std::string& what) {
    if (error_.empty()) error_ = what + " at byte " + std::to_string(pos_) + ": ..." + s_.substr(pos_, 40);
    return false;
  }
  void space() {
    while (pos_ < s_.size() && isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool validUtf8() {
    for (size_t i = 0; i < s_.size();) {
      const unsigned char c = s_[i];
      if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return fail("a control character");
      const int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
      if (len == 0 || i + len > s_.size()) return fail("invalid UTF-8");
      for (int k = 1; k < len; ++k) {
        if ((static_cast<unsigned char>(s_[i + k]) & 0xc0) != 0x80) return fail("invalid UTF-8");
      }
      i += len;
    }
    return true;
  }
  bool name(std::string* out) {
    const size_t start = pos_;
    while (pos_ < s_.size() && (isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == ':' ||
                                s_[pos_] == '-' || s_[pos_] == '.')) {
      ++pos_;
    }
    *out = s_.substr(start, pos_ - start);
    return (!out->empty() && !isdigit(static_cast<unsigned char>((*out)[0])) && (*out)[0] != '-') ||
           fail("expected a name");
  }
  // Decodes character data up to `stop`; '<' and a bare '&' are errors.
  bool chars(char stop, std::string* out) {
    while (pos_ < s_.size() && s_[pos_] != stop) {
      const char c = s_[pos_];
      if (c == '<') return fail("a raw '<' in text or an attribute");
      if (c != '&') {
        *out += c;
        ++pos_;
        continue;
      }
      const size_t semi = s_.find(';', pos_);
      if (semi == std::string::npos || semi - pos_ > 10) return fail("a bare '&'");
      const std::string ent = s_.substr(pos_ + 1, semi - pos_ - 1);
      if (ent == "amp") {
        *out += '&';
      } else if (ent == "lt") {
        *out += '<';
      } else if (ent == "gt") {
        *out += '>';
      } else if (ent == "quot") {
        *out += '"';
      } else if (ent == "apos") {
        *out += '\'';
      } else {
        return fail("an unknown entity &" + ent + ";");
      }
      pos_ = semi + 1;
    }
    return true;
  }
  bool element(Element* e, int depth) {
    if (depth > 50) return fail("nesting too deep");
    if (pos_ >= s_.size() || s_[pos_] != '<') return fail("expected '<'");
    ++pos_;
    if (!name(&e->name)) return false;
    for (;;) {
      const size_t before = pos_;
      space();
      if (s_.compare(pos_, 2, "/>") == 0) {
        pos_ += 2;
        return true;
      }
      if (pos_ < s_.size() && s_[pos_] == '>') {
        ++pos_;
        break;
      }
      if (pos_ == before) return fail("expected whitespace between attributes");
      std::string key, value;
      if (!name(&key)) return false;
      if (e->attr(key)) return fail("duplicate attribute " + key);
      if (pos_ >= s_.size() || s_[pos_] != '=') return fail("expected '=' after attribute " + key);
      ++pos_;
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) return fail("an unquoted attribute value");
      const char q = s_[pos_++];
      if (!chars(q, &value)) return false;
      if (pos_ >= s_.size()) return fail("an unterminated attribute value");
      ++pos_;
      e->attrs.emplace_back(key, value);
    }
    for (;;) {
      if (!chars('<', &e->text)) return false;
      if (pos_ >= s_.size()) return fail("the element " + e->name + " is not closed");
      if (s_.compare(pos_, 2, "</") == 0) {
        pos_ += 2;
        std::string closing;
        if (!name(&closing)) return false;
        if (closing != e->name) return fail("</" + closing + "> closes <" + e->name + ">");
        space();
        if (pos_ >= s_.size() || s_[pos_] != '>') return fail("expected '>'");
        ++pos_;
        return true;
      }
      e->children.emplace_back();
      if (!element(&e->children.back(), depth + 1)) return false;
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string error_;
};

template <typename Pred>
void collect(const Element& e, Pred pred, std::vector<const Element*>* out) {
  if (pred(e)) out->push_back(&e);
  for (const Element& c : e.children) collect(c, pred, out);
}

template <typename Pred>
std::vector<const Element*> findAll(const Element& root, Pred pred) {
  std::vector<const Element*> out;
  collect(root, pred, &out);
  return out;
}

std::vector<std::pair<double, double>> points(const Element& polyline) {
  std::vector<std::pair<double, double>> out;
  const std::string p = polyline.get("points");
  size_t i = 0;
  while (i < p.size()) {
    double x = 0, y = 0;
    int used = 0;
    if (std::sscanf(p.c_str() + i, " %lf,%lf%n", &x, &y, &used) != 2) {
      ADD_FAILURE() << "bad points: " << p;
      break;
    }
    out.emplace_back(x, y);
    i += used;
  }
  return out;
}

// ---- the runs drawn ------------------------------------------------------------------------------

RunSummary summary(std::vector<std::string> libs) {
  RunSummary s;
  s.program = "weft-perf";
  s.collective = "allreduce";
  s.host = "vm";
  s.date = "2025-01-02T03:04:05Z";
  s.memory = "host";
  s.topology = "2 ranks on 1 host (vm), 2 CPUs, no GPU";
  s.weftVersion = "0.4.0";
  s.nranks = 2;
  s.libraries = std::move(libs);
  return s;
}

Measurement row(const std::string& lib, size_t bytes, bool inPlace, double busBw, const std::string& type = "float") {
  Measurement m;
  m.library = lib;
  m.collective = "allreduce";
  m.type = type;
  m.op = "sum";
  m.bytes = bytes;
  m.count = bytes / 4;
  m.inPlace = inPlace;
  m.busBw = busBw;
  m.algBw = busBw / 2;
  m.timeUs = bytes > 0 && busBw > 0 ? bytes / (m.algBw * 1e3) : 0;
  return m;
}

// weft and mpi from 8 B to 64 MiB, out-of-place and in-place; gloo has no float rows at all.
std::vector<Measurement> sweep() {
  std::vector<Measurement> rows;
  for (size_t b = 8; b <= (64u << 20); b *= 2) {
    const double x = std::log2(static_cast<double>(b));
    for (bool inPlace : {false, true}) {
      rows.push_back(row("weft", b, inPlace, 0.5 * x + (inPlace ? 0.2 : 0)));
      rows.push_back(row("mpi", b, inPlace, 0.3 * x));
    }
  }
  Measurement na = row("gloo", 1024, false, 0);
  na.status = "n/a: gloo has no \"float\" <here>";
  rows.push_back(na);
  return rows;
}

Element parseSvg(const std::string& svg) {
  Element root;
  XmlReader reader(svg);
  EXPECT_TRUE(reader.document(&root)) << reader.error();
  EXPECT_EQ(root.name, "svg");
  EXPECT_EQ(root.get("xmlns"), "http://www.w3.org/2000/svg");
  // No coordinate may be NaN or infinite.
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf\""), std::string::npos);
  return root;
}

std::vector<const Element*> withAttr(const Element& root, const std::string& name, const std::string& key,
                                     const std::string& value) {
  return findAll(root, [&](const Element& e) { return e.name == name && e.get(key) == value; });
}

std::vector<std::string> texts(const Element& root, const std::string& cls) {
  std::vector<std::string> out;
  for (const Element* e : withAttr(root, "text", "class", cls)) out.push_back(e->allText());
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  for (const std::string& x : v) {
    if (x == s) return true;
  }
  return false;
}

TEST(PerfPlot, IsWellFormedWithTitleAxesAndOneSeriesPerLibrary) {
  const std::string svg = plotResultsSvg(summary({"weft", "mpi", "gloo"}), sweep());
  const Element root = parseSvg(svg);
  EXPECT_EQ(texts(root, "title"), std::vector<std::string>{"allreduce · float · sum · 2 ranks · host vm"});
  const std::vector<std::string> sub = texts(root, "subtitle");
  ASSERT_EQ(sub.size(), 1u);
  EXPECT_NE(sub[0].find("2025-01-02T03:04:05Z"), std::string::npos);
  EXPECT_NE(sub[0].find("2 ranks on 1 host (vm)"), std::string::npos);
  EXPECT_EQ(texts(root, "xtitle"), std::vector<std::string>{"message size (bytes, log2 scale)"});
  const std::vector<std::string> ytitles = texts(root, "ytitle");
  EXPECT_EQ(ytitles, (std::vector<std::string>{"bus bandwidth (GB/s)", "time per call (µs, log scale)"}));

  for (const char* panelName : {"busbw", "time"}) {
    SCOPED_TRACE(panelName);
    const std::vector<const Element*> panel = withAttr(root, "g", "data-panel", panelName);
    ASSERT_EQ(panel.size(), 1u);
    std::multiset<std::string> libs;
    for (const Element* g : withAttr(*panel[0], "g", "class", "series")) libs.insert(g->get("data-library"));
    EXPECT_EQ(libs, (std::multiset<std::string>{"weft", "mpi"})) << "gloo has no measured rows";
    for (const char* lib : {"weft", "mpi"}) {
      int outOfPlace = 0, inPlace = 0;
      for (const Element* p : withAttr(*panel[0], "polyline", "data-library", lib)) {
        const bool dashed = p->attr("stroke-dasharray") != nullptr;
        EXPECT_EQ(dashed, p->get("data-placement") == "in-place");
        (dashed ? inPlace : outOfPlace)++;
        const auto pts = points(*p);
        EXPECT_EQ(pts.size(), 24u);  // 8 B .. 64 MiB
        for (size_t i = 1; i < pts.size(); ++i) EXPECT_LT(pts[i - 1].first, pts[i].first) << "x must grow with size";
        // busbw grows with size here, and so does time: up the page is a smaller y.
        for (size_t i = 1; i < pts.size(); ++i) EXPECT_LT(pts[i].second, pts[i - 1].second);
      }
      EXPECT_EQ(outOfPlace, 1) << lib;
      EXPECT_EQ(inPlace, 1) << lib;
    }
  }

  // The legend names every library, the one without rows included, and explains the dashes.
  std::vector<const Element*> legend = withAttr(root, "g", "class", "legend");
  ASSERT_EQ(legend.size(), 1u);
  const std::string legendText = legend[0]->allText();
  EXPECT_NE(legendText.find("weft"), std::string::npos);
  EXPECT_NE(legendText.find("mpi"), std::string::npos);
  EXPECT_NE(legendText.find("gloo (no data)"), std::string::npos);
  EXPECT_NE(legendText.find("in-place"), std::string::npos);

  // The row with a status is not drawn but is mentioned, its text escaped and intact.
  const std::vector<std::string> foot = texts(root, "footnote");
  ASSERT_EQ(foot.size(), 1u);
  EXPECT_EQ(foot[0], "not drawn: 1 row, gloo: n/a: gloo has no \"float\" <here>");
}

TEST(PerfPlot, SizeTicksUseBinaryUnits) {
  std::vector<Measurement> small, large;
  for (size_t b = 8; b <= 1024; b *= 2) small.push_back(row("weft", b, false, 1));
  for (size_t b = 1u << 20; b <= (1u << 30); b *= 2) large.push_back(row("weft", b, false, 1));
  const std::vector<std::string> smallTicks = texts(parseSvg(plotResultsSvg(summary({"weft"}), small)), "xtick");
  EXPECT_TRUE(contains(smallTicks, "8 B"));
  EXPECT_TRUE(contains(smallTicks, "512 B"));
  EXPECT_TRUE(contains(smallTicks, "1 KiB"));
  const std::vector<std::string> largeTicks = texts(parseSvg(plotResultsSvg(summary({"weft"}), large)), "xtick");
  EXPECT_TRUE(contains(largeTicks, "64 MiB"));
  EXPECT_TRUE(contains(largeTicks, "1 GiB"));
  // Both panels label the axis, with few enough labels not to collide.
  EXPECT_EQ(largeTicks.size() % 2, 0u);
  EXPECT_LE(largeTicks.size() / 2, 10u);
}

TEST(PerfPlot, WeftKeepsItsColourAndPeersDiffer) {
  std::vector<Measurement> rows;
  for (const char* lib : {"mpi", "gloo", "weft", "nccl"}) rows.push_back(row(lib, 4096, false, 1));
  const Element root = parseSvg(plotResultsSvg(summary({"mpi", "gloo", "weft", "nccl"}), rows));
  const std::vector<const Element*> panel = withAttr(root, "g", "data-panel", "busbw");
  ASSERT_EQ(panel.size(), 1u);
  std::set<std::string> colours;
  for (const char* lib : {"mpi", "gloo", "weft", "nccl"}) {
    const std::vector<const Element*> p = withAttr(*panel[0], "polyline", "data-library", lib);
    ASSERT_EQ(p.size(), 1u) << lib;
    if (std::string(lib) == "weft") {
      EXPECT_EQ(p[0]->get("stroke"), "#0072B2");
    }
    colours.insert(p[0]->get("stroke"));
  }
  EXPECT_EQ(colours.size(), 4u);
}

TEST(PerfPlot, EdgeCasesStayWellFormed) {
  // One size, zero bandwidth and time, no in-place rows.
  {
    const std::vector<Measurement> rows = {row("weft", 1024, false, 0)};
    const Element root = parseSvg(plotResultsSvg(summary({"weft"}), rows));
    const std::vector<const Element*> p = withAttr(root, "polyline", "data-library", "weft");
    ASSERT_EQ(p.size(), 1u) << "zero time has no place on the log axis; zero busbw does";
    EXPECT_EQ(points(*p[0]).size(), 1u);
    EXPECT_TRUE(withAttr(root, "polyline", "data-placement", "in-place").empty());
    EXPECT_EQ(root.allText().find("in-place"), std::string::npos);
  }
  // No rows at all.
  {
    const Element root = parseSvg(plotResultsSvg(summary({"weft", "mpi"}), {}));
    EXPECT_TRUE(findAll(root, [](const Element& e) { return e.name == "polyline"; }).empty());
    EXPECT_NE(root.allText().find("no measurements to draw"), std::string::npos);
    EXPECT_EQ(texts(root, "title"), std::vector<std::string>{"allreduce · 2 ranks · host vm"});
  }
  // Everything failed.
  {
    std::vector<Measurement> rows = {row("weft", 8, false, 1), row("weft", 16, false, 1)};
    for (Measurement& m : rows) m.status = "failed: timeout";
    const Element root = parseSvg(plotResultsSvg(summary({"weft"}), rows));
    EXPECT_TRUE(findAll(root, [](const Element& e) { return e.name == "polyline"; }).empty());
    EXPECT_TRUE(contains(texts(root, "footnote"), "not drawn: 2 rows, weft: failed: timeout"));
  }
  // Size 0, NaN and infinite values are left out, not drawn off the page.
  {
    std::vector<Measurement> rows = {row("weft", 0, false, 0), row("weft", 64, false, 2), row("weft", 128, false, 3)};
    rows[1].timeUs = std::nan("");
    rows[2].busBw = INFINITY;
    const std::string svg = plotResultsSvg(summary({"weft"}), rows);
    const Element root = parseSvg(svg);
    EXPECT_TRUE(contains(texts(root, "footnote"), "not drawn: 1 row of size 0 (no place on a log axis)"));
  }
}

TEST(PerfPlot, HostileStringsAreEscaped) {
  RunSummary run = summary({"<b>&\"x'", "weft"});
  run.host = "a<b>&c";
  run.topology = "line\nbreak \x01 and bad utf-8 \xff\xfe";
  run.notes = {"nccl: skipped: </svg> & more"};
  std::vector<Measurement> rows = {row("<b>&\"x'", 8, false, 1), row("<b>&\"x'", 16, false, 2)};
  const std::string svg = plotResultsSvg(run, rows);
  const Element root = parseSvg(svg);
  EXPECT_EQ(texts(root, "title"), std::vector<std::string>{"allreduce · float · sum · 2 ranks · host a<b>&c"});
  EXPECT_EQ(withAttr(root, "g", "data-library", "<b>&\"x'").size(), 2u);
  EXPECT_TRUE(contains(texts(root, "footnote"), "note: nccl: skipped: </svg> & more"));
}

TEST(PerfPlot, SeveralTypesDrawTheFirstAndSaySo) {
  std::vector<Measurement> rows;
  for (const char* type : {"float", "int32", "double"}) {
    for (size_t b = 8; b <= 64; b *= 2) rows.push_back(row("weft", b, false, 1, type));
  }
  const Element root = parseSvg(plotResultsSvg(summary({"weft"}), rows));
  EXPECT_EQ(texts(root, "title"), std::vector<std::string>{"allreduce · float · sum · 2 ranks · host vm"});
  const std::vector<std::string> sub = texts(root, "subtitle");
  ASSERT_EQ(sub.size(), 2u);
  EXPECT_EQ(sub[1], "showing float · sum; also in the data, not drawn: int32 · sum, double · sum");
  const std::vector<const Element*> p = withAttr(root, "polyline", "data-library", "weft");
  ASSERT_EQ(p.size(), 2u);  // one per panel
  EXPECT_EQ(points(*p[0]).size(), 4u);
}

}  // namespace
}  // namespace weft::perf
