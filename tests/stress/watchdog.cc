#include "stress/watchdog.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace vdnn::stress {
namespace {

// What the armed case is, for the crash handler: a fixed buffer (a signal handler may only read
// memory and write()), filled by arm() and emptied by disarm().
constexpr std::array kCrashSignals{SIGSEGV, SIGBUS, SIGFPE, SIGILL};
char g_case[16384];
std::atomic<size_t> g_case_bytes{0};
struct sigaction g_previous[kCrashSignals.size()];
std::atomic<int> g_watchdogs{0};  // the first one installs the handler, the last one removes it

void write_all(const char* text, size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = write(STDERR_FILENO, text, bytes);
    if (n <= 0) return;
    text += n, bytes -= static_cast<size_t>(n);
  }
}

// Says which case crashed, puts the previous handler back and returns: the faulting instruction
// runs again and the signal reaches that handler (the default one, or a sanitizer's report). A
// signal sent by raise() or kill() is sent again instead.
void on_crash(int sig, siginfo_t* info, void*) {
  if (const size_t bytes = g_case_bytes.load(); bytes > 0) {  // else: between cases
    const char head[] = "\nstress: the process crashed (fatal signal) in this case:\n";
    write_all(head, sizeof head - 1);
    write_all(g_case, bytes);
    write_all("\n", 1);
  }
  for (size_t i = 0; i < kCrashSignals.size(); ++i)
    if (kCrashSignals[i] == sig) sigaction(sig, &g_previous[i], nullptr);
  if (info->si_code <= 0) raise(sig);
}

}  // namespace

Watchdog::Watchdog(double seconds) : seconds_(seconds), thread_([this] { watch(); }) {
  struct sigaction action {};
  action.sa_sigaction = on_crash;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  if (g_watchdogs++ == 0)
    for (size_t i = 0; i < kCrashSignals.size(); ++i) sigaction(kCrashSignals[i], &action, &g_previous[i]);
}

Watchdog::~Watchdog() {
  if (--g_watchdogs == 0)
    for (size_t i = 0; i < kCrashSignals.size(); ++i) sigaction(kCrashSignals[i], &g_previous[i], nullptr);
  g_case_bytes = 0;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_one();
  thread_.join();
}

void Watchdog::arm(std::string what) {
  {
    std::lock_guard lock(mutex_);
    armed_ = true;
    deadline_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                       std::chrono::duration<double>(seconds_));
    what_ = std::move(what);
    g_case_bytes = 0;
    const size_t bytes = std::min(what_.size(), sizeof g_case);
    std::memcpy(g_case, what_.data(), bytes);
    g_case_bytes = bytes;
  }
  changed_.notify_one();
}

void Watchdog::disarm() {
  {
    std::lock_guard lock(mutex_);
    armed_ = false;
    g_case_bytes = 0;
  }
  changed_.notify_one();
}

void Watchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      changed_.wait(lock);
    } else if (changed_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ &&
               std::chrono::steady_clock::now() >= deadline_) {
      std::fprintf(stderr, "\nstress watchdog: no result after %.0f s, the case hangs:\n%s\n", seconds_, what_.c_str());
      std::fflush(stderr);
      std::abort();
    }
  }
}

}  // namespace vdnn::stress
