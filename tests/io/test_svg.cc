// vdnn's own pictures: the SVG writer escapes what it writes, axes get round ticks, and both
// charts (memory over a step by class, configurations compared) are valid XML that renders to a
// PNG of the document's size.
#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "io/svg_check.h"
#include "report/chart.h"
#include "report/configuration_chart.h"
#include "report/memory_timeline_chart.h"
#include "report/svg.h"
#include "util/text_file.h"

namespace vdnn {
namespace test_svg {

MemoryPoint point(double seconds, size_t weights, size_t fmaps, size_t workspace = 0) {
  MemoryPoint m{.seconds = seconds, .bytes = weights + fmaps + workspace};
  m.by_class[index_of(MemoryClass::kWeights)] = weights;
  m.by_class[index_of(MemoryClass::kFeatureMaps)] = fmaps;
  m.by_class[index_of(MemoryClass::kWorkspace)] = workspace;
  return m;
}

const size_t kMiB = size_t{1} << 20;

TEST(Svg, EscapesTextAndTooltipsAndIsOneDocument) {
  Svg svg(200, 100);
  svg.text(10, 20, "a < b & \"c\"");
  svg.rect(0, 0, 10, 10, {.fill = "red", .tooltip = "x > y"});
  const std::string s = svg.str();
  EXPECT_NE(s.find("a &lt; b &amp; &quot;c&quot;"), std::string::npos) << s;
  EXPECT_NE(s.find("<title>x &gt; y</title></rect>"), std::string::npos) << s;
  EXPECT_EQ(s.rfind("<?xml", 0), 0u);
  EXPECT_NE(s.find("width=\"200.00\" height=\"100.00\""), std::string::npos);
}

TEST(Chart, TicksAreRoundAndLabelsCarryTheDecimalsTheyNeed) {
  EXPECT_EQ(nice_ticks(10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(24.66, 5), (std::vector<double>{0, 5, 10, 15, 20}));
  EXPECT_EQ(nice_ticks(1.1, 4), (std::vector<double>{0, 0.5, 1.0}));
  EXPECT_EQ(tick_label(2500, 500), "2500");
  EXPECT_EQ(tick_label(0.75, 0.25), "0.75");
  EXPECT_EQ(byte_unit(100.0 * kMiB).name, "MiB");
  EXPECT_EQ(byte_unit(24.0 * 1024 * kMiB).name, "GiB");
  EXPECT_EQ(time_unit(2.3).name, "ms");
}

TEST(Chart, BothPicturesAreValidXmlAndRenderAtTheirSize) {
  const auto dir = test::temp_dir("svg");
  const std::vector<MemoryPanel> panels = {
      {"none+fastest",
       {point(0, 10 * kMiB, 0), point(0.1, 10 * kMiB, 60 * kMiB, 5 * kMiB), point(0.2, 10 * kMiB, 0)},
       0.25},
      {"all+fastest", {point(0, 10 * kMiB, 0), point(0.1, 10 * kMiB, 30 * kMiB), point(0.3, 10 * kMiB, 0)}, 0.35}};
  write_text_file((dir / "memory.svg").string(), memory_timeline_svg("test net, batch 8, cpu", panels, 64 * kMiB));
  const test::PngSize memory = test::expect_svg_renders(dir / "memory.svg");
  EXPECT_EQ(memory.width, 960u);
  EXPECT_GT(memory.height, 2 * 200u) << "two panels";

  const std::vector<ConfigurationBar> bars = {{"none+fastest", panels[0].memory[1], 80 * kMiB, 0.25, false},
                                              {"dyn: all+fastest", panels[1].memory[1], 41 * kMiB, 0.35, true}};
  write_text_file((dir / "plan.svg").string(),
                  configuration_chart_svg("test net, batch 8, cpu", bars, 64 * kMiB, 0.25));
  const test::PngSize plan = test::expect_svg_renders(dir / "plan.svg");
  EXPECT_EQ(plan.width, 1000u);
  EXPECT_GT(plan.height, 150u);
  std::filesystem::remove_all(dir);
}

// A network of thousands of layers has hundreds of thousands of memory points; the picture draws
// two per pixel, each the busiest of its span, so its size does not grow with the layers and the
// peak still shows (a 20,000-layer chain's picture was 150 MB).
TEST(Chart, ALongTimelineIsDrawnAtTwoPointsPerPixelKeepingItsPeak) {
  std::vector<MemoryPoint> long_step;
  for (int i = 0; i < 200000; ++i)
    long_step.push_back(point(i * 1e-6, 10 * kMiB, (i % 7 == 3 ? 20 : 5) * kMiB + (i == 123457 ? 90 * kMiB : 0)));
  const std::string svg = memory_timeline_svg("chain", {{"all+fastest", long_step, 0.2}}, 0);
  EXPECT_LT(svg.size(), size_t{1} << 20) << "bytes";
  EXPECT_NE(svg.find("peak 105.00 MiB"), std::string::npos);
  const std::vector<MemoryPoint> drawn = busiest_per_span(long_step, 0.2, 1000);
  ASSERT_LE(drawn.size(), 1000u);
  EXPECT_GT(drawn.size(), 900u);
  EXPECT_EQ(peak_point(drawn).bytes, 105 * kMiB) << "the peak is drawn";
  EXPECT_EQ(drawn.front().seconds, 0.0);
  for (size_t i = 1; i < drawn.size(); ++i) ASSERT_LT(drawn[i - 1].seconds, drawn[i].seconds);
  const std::vector<MemoryPoint> short_step(long_step.begin(), long_step.begin() + 10);
  EXPECT_EQ(busiest_per_span(short_step, 0.2, 1000).size(), 10u) << "fewer points than spans: as they are";
  const auto dir = test::temp_dir("long_svg");
  write_text_file((dir / "long.svg").string(), svg);
  test::expect_svg_renders(dir / "long.svg");
  std::filesystem::remove_all(dir);
}

TEST(Chart, PngSizeReadsTheHeaderAndRejectsOtherFiles) {
  const auto dir = test::temp_dir("png");
  write_text_file((dir / "not.png").string(), "GIF89a and more bytes than a header");
  EXPECT_EQ(test::png_size(dir / "not.png").width, 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace test_svg
}  // namespace vdnn
