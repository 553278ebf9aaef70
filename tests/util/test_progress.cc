// The progress display: what one update says (bar, percent, rate, ETA), durations, and what each
// mode writes — a redrawn line on a terminal, whole lines in logs, nothing when switched off.
#include <gtest/gtest.h>

#include <cstdio>

#include "util/progress.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

std::string written(Progress::Mode mode, double line_seconds) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  {
    Progress p(f, mode, "epoch 1/2", "img/s", line_seconds);
    for (int i = 1; i <= 4; ++i) p.update(i, 4, i * 100.0, "loss 0.5");
  }
  std::fclose(f);
  std::string out(buf, size);
  std::free(buf);
  return out;
}

TEST(Progress, OneUpdateShowsBarPercentRateAndEta) {
  const std::string t = Progress::render("epoch 3/10", 25, 100, 1234.4, "img/s", 30.0, "loss 0.4321", 20);
  for (const char* want : {"epoch 3/10", "[#####...............]", "25/100", " 25%", "1234 img/s", "30s elapsed",
                           "ETA 1m30s", "loss 0.4321"})
    EXPECT_NE(t.find(want), std::string::npos) << want << " not in: " << t;
  EXPECT_EQ(Progress::render("x", 10, 10, 1, "u", 5, "", 0).find("ETA"), std::string::npos) << "no ETA when done";
}

TEST(Progress, DurationsReadNaturally) {
  EXPECT_EQ(Progress::format_duration(42.4), "42s");
  EXPECT_EQ(Progress::format_duration(65), "1m05s");
  EXPECT_EQ(Progress::format_duration(3720), "1h02m");
  EXPECT_EQ(Progress::format_duration(-3), "0s");
}

TEST(Progress, EachModeWritesWhatItsReaderNeeds) {
  const std::string bar = written(Progress::Mode::kBar, 10);
  EXPECT_NE(bar.find('\r'), std::string::npos) << "a terminal gets one line redrawn";
  EXPECT_NE(bar.find("4/4 100%"), std::string::npos) << bar;
  const std::string lines = written(Progress::Mode::kLines, 0);
  EXPECT_EQ(lines.find('\r'), std::string::npos) << "logs get no escape codes";
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 3) << lines << "(the last step is the caller's summary)";
  EXPECT_EQ(written(Progress::Mode::kLines, 3600), "") << "nothing before the interval has passed";
  EXPECT_EQ(written(Progress::Mode::kNone, 0), "");
  EXPECT_THROW(Progress::parse("sometimes"), Error);
}

}  // namespace
}  // namespace vdnn
