#include "util/progress.h"

#include <unistd.h>

#include <cmath>

#include "vdnn/error.h"

namespace vdnn {

Progress::Mode Progress::parse(const std::string& text) {
  if (text == "auto") return Mode::kAuto;
  if (text == "bar") return Mode::kBar;
  if (text == "lines") return Mode::kLines;
  if (text == "none") return Mode::kNone;
  VDNN_THROW("--progress: expected auto, bar, lines or none, got '" << text << "'");
}

Progress::Progress(std::FILE* out, Mode mode, std::string label, std::string rate_unit, double line_seconds)
    : out_(out), mode_(mode), label_(std::move(label)), unit_(std::move(rate_unit)),
      line_seconds_(line_seconds), start_(Clock::now()), last_(start_) {
  if (mode_ == Mode::kAuto) mode_ = isatty(fileno(out)) ? Mode::kBar : Mode::kLines;
}

std::string Progress::format_duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

std::string Progress::render(const std::string& label, int64_t done, int64_t total, double rate,
                             const std::string& rate_unit, double elapsed, const std::string& status,
                             int bar_width) {
  const double fraction = total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 0.0;
  std::string text = label + " ";
  if (bar_width > 0) {
    const int filled = static_cast<int>(fraction * bar_width);
    text += "[" + std::string(filled, '#') + std::string(bar_width - filled, '.') + "] ";
  }
  char buf[160];
  const double eta = done > 0 && done < total ? elapsed * static_cast<double>(total - done) / static_cast<double>(done) : 0.0;
  std::snprintf(buf, sizeof buf, "%lld/%lld %3.0f%%  %.0f %s  %s elapsed", static_cast<long long>(done),
                static_cast<long long>(total), fraction * 100, rate, rate_unit.c_str(),
                format_duration(elapsed).c_str());
  text += buf;
  if (done < total) text += "  ETA " + format_duration(eta);
  if (!status.empty()) text += "  " + status;
  return text;
}

void Progress::update(int64_t done, int64_t total, double units, const std::string& status) {
  if (mode_ == Mode::kNone || finished_) return;
  const auto now = Clock::now();
  const double since_last = std::chrono::duration<double>(now - last_).count();
  // The bar shows the end too; in logs the caller's summary line follows, so lines skip it.
  if (mode_ == Mode::kBar ? since_last < 0.1 && done < total : since_last < line_seconds_ || done >= total) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? units / elapsed : 0.0;
  const std::string text = render(label_, done, total, rate, unit_, elapsed, status, mode_ == Mode::kBar ? 24 : 0);
  if (mode_ == Mode::kBar) {
    std::fprintf(out_, "\r\033[K%s", text.c_str());
    drawn_ = true;
  } else {
    std::fprintf(out_, "%s\n", text.c_str());
  }
  std::fflush(out_);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (mode_ == Mode::kBar && drawn_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
  }
}

}  // namespace vdnn
