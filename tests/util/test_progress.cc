// The progress display: what one update says (bar, percent, rate, ETA), how it fits a narrow
// terminal, durations, and what each mode writes — a redrawn line on a terminal, whole lines in
// logs, nothing when switched off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "util/progress.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_progress {

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

// A narrow terminal: the line never reaches the last column (it would wrap and scroll); the bar
// shortens first, then the least useful fields go, and what stays is whole.
TEST(Progress, TheBarLineFitsTheTerminalWidth) {
  auto fitted = [](int columns, const std::string& status = "loss 0.4321") {
    return Progress::render_fitted("epoch 3/10", 25, 100, 1234.4, "img/s", 30.0, status, columns);
  };
  const std::string wide = fitted(200);
  EXPECT_EQ(wide, Progress::render("epoch 3/10", 25, 100, 1234.4, "img/s", 30.0, "loss 0.4321", 24))
      << "room enough: the full line with the full bar";
  for (int columns : {1, 2, 10, 20, 30, 40, 50, 60, 80, 120, 200}) {
    const std::string t = fitted(columns);
    EXPECT_LE(t.size(), static_cast<size_t>(std::max(1, columns - 1))) << columns << ": " << t;
    EXPECT_TRUE(t.starts_with(std::string("epoch 3/10").substr(0, static_cast<size_t>(std::max(1, columns - 1)))))
        << columns << ": " << t;
  }
  const std::string at80 = fitted(80);
  EXPECT_NE(at80.find("loss 0.4321"), std::string::npos) << at80;
  EXPECT_NE(at80.find("ETA 1m30s"), std::string::npos) << at80;
  EXPECT_NE(at80.find("["), std::string::npos) << at80;
  const std::string at40 = fitted(40);
  for (const char* want : {"25/100", "ETA 1m30s"})
    EXPECT_NE(at40.find(want), std::string::npos) << want << " not in: " << at40;
  EXPECT_EQ(at40.find("elapsed"), std::string::npos) << "elapsed goes first: " << at40;
  const std::string at20 = fitted(20);
  EXPECT_EQ(at20, "epoch 3/10 25/100") << "label and count stay longest, cut at the width without blanks";
  // Shortening the bar comes before dropping anything: 10 columns less costs only bar cells.
  const size_t full = wide.size();
  const std::string shorter = fitted(static_cast<int>(full) + 1 - 10);
  EXPECT_NE(shorter.find("elapsed"), std::string::npos) << shorter;
  EXPECT_NE(shorter.find("[" + std::string(3, '#') + std::string(11, '.') + "]"), std::string::npos) << shorter;
}

TEST(Progress, TheWidthComesFromTheTerminalThenColumns) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);  // no terminal
  const char* saved = std::getenv("COLUMNS");
  const std::string old = saved ? saved : "";
  setenv("COLUMNS", "33", 1);
  EXPECT_EQ(Progress::terminal_columns(f), 33);
  setenv("COLUMNS", "wide", 1);
  EXPECT_EQ(Progress::terminal_columns(f), 80);
  unsetenv("COLUMNS");
  EXPECT_EQ(Progress::terminal_columns(f), 80);
  if (saved) setenv("COLUMNS", old.c_str(), 1);
  {
    Progress p(f, Progress::Mode::kBar, "epoch 1/2", "img/s", 10, /*columns=*/24);
    for (int i = 1; i <= 4; ++i) p.update(i, 4, i * 100.0, "loss 0.5");
  }
  std::fclose(f);
  const std::string out(buf, size);
  std::free(buf);
  for (size_t start = 0; (start = out.find("\r\033[K", start)) != std::string::npos;) {
    start += 4;
    const size_t end = std::min(out.find('\r', start), out.size());
    EXPECT_LE(end - start, 23u) << "a drawn line wider than 24 - 1: " << out.substr(start, end - start);
  }
  EXPECT_NE(out.find("4/4 100%"), std::string::npos) << out;
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

}  // namespace test_progress
}  // namespace vdnn
