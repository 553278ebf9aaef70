// tools/numeric_flags.h — the raw-text checks every numeric flag of every `vdnn` subcommand gets.
//
// Model: CLI11 2.1 converts "-1" and "18446744073709551616" for an unsigned flag to 2^64-1 (it
// saturates, so `--seed -1` silently ran with seed 18446744073709551615), and CLI::Range accepts NaN
// (every comparison with NaN is false). check_numeric_flags() walks every option of every
// subcommand once, after they are all added, and adds one validator chosen by the option's type:
// FLOAT must be a finite number, INT a decimal integer that fits int64, UINT one that fits uint64
// (no sign), and an integer is handed on in plain decimal: CLI11 converts with base 0, so "010" was
// read as octal 8 and "0x8" as 8. It runs before a Range the command gives (which still bounds the
// value), so "1_0" is "not a number", not "out of range"; it only makes sure the value checked is
// the value written. A TEXT flag given an empty value (`--device-memory "$UNSET"`) is
// refused rather than read as "not given". A new flag is covered without anyone remembering to.
//
// --threads gets threads_check(): at most the hardware threads of this machine. OpenMP and oneDNN
// gain nothing from more threads than the cores run, and lose a lot (64 threads on 2 cores ran one
// step 57x slower than 2), so a larger value is a mistake worth one line rather than a slow run.
//
//   add_train_command(*train); ...; check_numeric_flags(app);    // tools/main.cc
//   app.add_option("--threads", n, "...")->check(threads_check());
#pragma once

#include <CLI/CLI.hpp>

namespace vdnn::cli {

void check_numeric_flags(CLI::App& app);

// 1 to the hardware threads (std::thread::hardware_concurrency(), at least 1).
CLI::Validator threads_check();
int max_threads();

}  // namespace vdnn::cli
