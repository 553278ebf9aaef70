#include "util/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "vdnn/error.h"

namespace vdnn {

Progress::Mode Progress::parse(const std::string& text) {
  if (text == "auto") return Mode::kAuto;
  if (text == "bar") return Mode::kBar;
  if (text == "lines") return Mode::kLines;
  if (text == "none") return Mode::kNone;
  VDNN_THROW("--progress: expected auto, bar, lines or none, got '" << text << "'");
}

Progress::Progress(std::FILE* out, Mode mode, std::string label, std::string rate_unit, double line_seconds,
                   int columns)
    : out_(out),
      mode_(mode),
      label_(std::move(label)),
      unit_(std::move(rate_unit)),
      line_seconds_(line_seconds),
      columns_(columns),
      start_(Clock::now()),
      last_(start_) {
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

namespace {

// The fields of one update; an empty one is left out. Joined as
// "label [bar] 25/100  25%  1234 img/s  30s elapsed  ETA 1m30s  status".
struct Fields {
  std::string label, bar, count, rate, elapsed, eta, status;

  std::string text() const {
    std::string t = label;
    for (const std::string* f : {&bar, &count}) t += f->empty() ? "" : " " + *f;
    for (const std::string* f : {&rate, &elapsed, &eta, &status}) t += f->empty() ? "" : "  " + *f;
    return t;
  }
};

double fraction_of(int64_t done, int64_t total) {
  return total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 0.0;
}

std::string bar_of(double fraction, int width) {
  const int filled = static_cast<int>(fraction * width);
  return "[" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
}

Fields fields_of(const std::string& label, int64_t done, int64_t total, double rate, const std::string& rate_unit,
                 double elapsed, const std::string& status) {
  Fields f;
  f.label = label;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%lld/%lld %3.0f%%", static_cast<long long>(done), static_cast<long long>(total),
                fraction_of(done, total) * 100);
  f.count = buf;
  std::snprintf(buf, sizeof buf, "%.0f ", rate);
  f.rate = buf + rate_unit;
  f.elapsed = Progress::format_duration(elapsed) + " elapsed";
  const double eta =
      done > 0 && done < total ? elapsed * static_cast<double>(total - done) / static_cast<double>(done) : 0.0;
  if (done < total) f.eta = "ETA " + Progress::format_duration(eta);
  f.status = status;
  return f;
}

}  // namespace

std::string Progress::render(const std::string& label, int64_t done, int64_t total, double rate,
                             const std::string& rate_unit, double elapsed, const std::string& status, int bar_width) {
  Fields f = fields_of(label, done, total, rate, rate_unit, elapsed, status);
  if (bar_width > 0) f.bar = bar_of(fraction_of(done, total), bar_width);
  return f.text();
}

std::string Progress::render_fitted(const std::string& label, int64_t done, int64_t total, double rate,
                                    const std::string& rate_unit, double elapsed, const std::string& status,
                                    int columns) {
  constexpr int kBar = 24, kShortestBar = 10;
  const size_t limit = static_cast<size_t>(std::max(1, columns - 1));
  const double fraction = fraction_of(done, total);
  Fields f = fields_of(label, done, total, rate, rate_unit, elapsed, status);
  f.bar = bar_of(fraction, kBar);
  std::string text = f.text();
  if (text.size() <= limit) return text;
  const int over = static_cast<int>(std::min(text.size() - limit, size_t{kBar}));
  f.bar = bar_of(fraction, std::max(kShortestBar, kBar - over));
  if ((text = f.text()).size() <= limit) return text;
  for (std::string* drop : {&f.elapsed, &f.rate, &f.bar, &f.status, &f.eta}) {
    drop->clear();
    if ((text = f.text()).size() <= limit) return text;
  }
  text.resize(limit);  // the label and the count alone are too long: cut them, no trailing blanks
  while (text.size() > 1 && text.back() == ' ') text.pop_back();
  return text;
}

int Progress::terminal_columns(std::FILE* out) {
  winsize ws{};
  if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* env = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long c = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && c > 0 && c < 100000) return static_cast<int>(c);
  }
  return 80;
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
  const std::string text = mode_ == Mode::kBar ? render_fitted(label_, done, total, rate, unit_, elapsed, status,
                                                               columns_ > 0 ? columns_ : terminal_columns(out_))
                                               : render(label_, done, total, rate, unit_, elapsed, status, 0);
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
