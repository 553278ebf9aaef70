// util/progress.h — progress of a long loop: a bar on a terminal, plain periodic lines in logs.
//
// Model: the caller reports "done of total" with a short status text; on a terminal one line is
// redrawn in place (at most 10 times a second) with a bar, the rate, the elapsed time and an ETA;
// elsewhere (logs, CI) a full line is printed every `line_seconds` (the caller prints the summary).
// finish() ends the bar's line so the next output starts clean.
//
//   Progress p(stdout, Progress::Mode::kAuto, "epoch 3/10", "img/s");
//   for (...) p.update(done, total, /*units done=*/images, "loss 0.43");
//   p.finish();
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace vdnn {

class Progress {
 public:
  enum class Mode { kAuto, kBar, kLines, kNone };
  // "auto", "bar", "lines" or "none"; throws vdnn::Error naming --progress otherwise.
  static Mode parse(const std::string& text);

  Progress(std::FILE* out, Mode mode, std::string label, std::string rate_unit, double line_seconds = 10.0);
  ~Progress() { finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` of `total` steps; `units` counts what the rate is in (images, layers...).
  void update(int64_t done, int64_t total, double units, const std::string& status = "");
  void finish();

  // "1m05s", "42s", "1h02m".
  static std::string format_duration(double seconds);
  // The text of one update, as the bar shows it (no escape codes): for tests and logs.
  static std::string render(const std::string& label, int64_t done, int64_t total, double rate,
                            const std::string& rate_unit, double elapsed, const std::string& status,
                            int bar_width);

 private:
  using Clock = std::chrono::steady_clock;
  std::FILE* out_;
  Mode mode_;
  std::string label_, unit_;
  double line_seconds_;
  Clock::time_point start_, last_;
  bool drawn_ = false, finished_ = false;
};

}  // namespace vdnn
