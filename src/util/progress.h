// util/progress.h — progress of a long loop: a bar on a terminal, plain periodic lines in logs.
//
// Model: the caller reports "done of total" with a short status text; on a terminal one line is
// redrawn in place (at most 10 times a second) with a bar, the rate, the elapsed time and an ETA;
// elsewhere (logs, CI) a full line is printed every `line_seconds` (the caller prints the summary).
// The bar's line fits the terminal (its width asked at every redraw; COLUMNS, then 80, where the
// output is no terminal): at most width - 1 characters, so it never wraps and scrolls; to fit, the
// bar shortens, then the elapsed time, the rate, the bar, the status and the ETA go, in that order.
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

  // `columns` > 0 fixes the width the bar fits (tests); 0 asks the terminal.
  Progress(std::FILE* out, Mode mode, std::string label, std::string rate_unit, double line_seconds = 10.0,
           int columns = 0);
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
                            const std::string& rate_unit, double elapsed, const std::string& status, int bar_width);
  // The bar's line of one update in at most `columns` - 1 characters (see the model above).
  static std::string render_fitted(const std::string& label, int64_t done, int64_t total, double rate,
                                   const std::string& rate_unit, double elapsed, const std::string& status,
                                   int columns);
  // The width of the terminal `out` writes to: its window size, else $COLUMNS, else 80.
  static int terminal_columns(std::FILE* out);

 private:
  using Clock = std::chrono::steady_clock;
  std::FILE* out_;
  Mode mode_;
  std::string label_, unit_;
  double line_seconds_;
  int columns_;  // 0: ask the terminal
  Clock::time_point start_, last_;
  bool drawn_ = false, finished_ = false;
};

}  // namespace vdnn
