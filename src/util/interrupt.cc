#include "util/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "util/atomic_file.h"

namespace vdnn {

namespace {

std::atomic<int> deferring{0};        // DeferInterrupts alive
std::atomic<int> deferred_signal{0};  // the first signal while deferring
static_assert(std::atomic<int>::is_always_lock_free);

void on_signal(int sig) {
  int none = 0;
  if (deferring.load() > 0 && deferred_signal.compare_exchange_strong(none, sig)) return;
  unlink_temp_files_in_flight();
  static const char kMessage[] = "\ninterrupted\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  ::_exit(128 + sig);
}

}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int interrupt_signal() { return deferred_signal.load(); }

DeferInterrupts::DeferInterrupts() { deferring.fetch_add(1); }
DeferInterrupts::~DeferInterrupts() { deferring.fetch_sub(1); }

}  // namespace vdnn
