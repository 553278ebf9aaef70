// util/interrupt.h — Ctrl-C (SIGINT) and SIGTERM: never leave a temporary file behind, and let a
// long loop stop cleanly between its steps.
//
// Model: install_interrupt_handler() (once, in main) makes a signal remove the temporary files of
// every AtomicFile in flight (util/atomic_file.h), print "interrupted" and exit with 128 + the
// signal (130 for Ctrl-C). While a DeferInterrupts is alive the first signal only sets a flag that
// the loop reads between steps (interrupt_signal()) to stop at a clean point and say how to go on;
// a second signal exits at once as above. The handler calls only async-signal-safe functions.
//
//   DeferInterrupts defer;                       // e.g. around the training loop
//   for (...) { step(); if (interrupt_signal()) throw Interrupted{interrupt_signal()}; }
#pragma once

namespace vdnn {

void install_interrupt_handler();

// 0, or the signal received while a DeferInterrupts was alive.
int interrupt_signal();

class DeferInterrupts {
 public:
  DeferInterrupts();
  ~DeferInterrupts();
  DeferInterrupts(const DeferInterrupts&) = delete;
  DeferInterrupts& operator=(const DeferInterrupts&) = delete;
};

// Thrown by a loop that stopped at a deferred signal; not a vdnn::Error (nothing went wrong).
struct Interrupted {
  int signal;
  int exit_code() const { return 128 + signal; }
};

}  // namespace vdnn
