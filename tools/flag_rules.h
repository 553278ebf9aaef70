// tools/flag_rules.h — a flag given where it does not apply is refused, never silently ignored.
//
// Model: each subcommand keeps one table, FlagRules, of "flag → the condition under which it
// applies, said in words". A Condition is the words that complete "--x applies only ..." (`applies`),
// the test on this command line (`holds`) and the words that complete "it was given ..." (`given`:
// the setting that makes the flag moot). After parsing, tools/main.cc calls check() once, before the
// command runs: the first rule, in the order added, whose flag was given (CLI11's count, so a
// default never counts) and whose condition does not hold throws vdnn::Error, one line, exit 1:
//   --host-memory applies only with --policy all, conv, dyn or auto (the policies that offload);
//   it was given with --policy none
// A flag that always applies has no rule; a flag may have several. `holds` and `given` are asked
// only for a flag that was given, so a condition may look at the file system (what --data is).
// The table is data: tests/cli/test_flag_rules.cc walks every command's table (every rule names a
// flag the command has, and its message names it).
//
//   FlagRules rules(app);                                        // after the flags are added
//   rules.add({"--momentum"}, one_of("--optimizer", o.optimizer, {"sgd"}));
//   rules.add({"--checkpoint-every"}, with_flag(app, "--save", "FILE"));
//   ...                                                          // after parsing:
//   rules.check();  // --momentum applies only with --optimizer sgd; it was given with --optimizer adamw
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace vdnn::cli {

// When a flag applies, in words and as a test of the parsed command line.
struct Condition {
  std::string applies;                 // completes "--x applies only ...": "with --optimizer sgd"
  std::function<bool()> holds;         // true: the flag applies on this command line
  std::function<std::string()> given;  // completes "it was given ...": "with --optimizer adamw"
};

struct FlagRule {
  std::string flag;  // as the command declares it: "--host-memory"
  Condition condition;
};

class FlagRules {
 public:
  explicit FlagRules(const CLI::App& app) : app_(&app) {}

  // One rule per flag, each with `condition`. A flag the command does not have is a bug in vdnn
  // (an InternalError naming it), found the first time the command is declared.
  FlagRules& add(std::initializer_list<const char*> flags, const Condition& condition);

  // Throws vdnn::Error with message() for the first rule whose flag was given and does not apply.
  void check() const;

  const std::vector<FlagRule>& rules() const { return rules_; }

  // "--x applies only <applies>; it was given <given>".
  static std::string message(const FlagRule& rule, const std::string& given);

 private:
  const CLI::App* app_;
  std::vector<FlagRule> rules_;
};

// `value` (the parsed value of `flag`) is one of `allowed`: "with --policy all, conv, dyn or auto"
// and `why` after it in parentheses when given; given "with --policy none". `value` is read when
// checked, so it may be bound before parsing.
Condition one_of(const char* flag, const std::string& value, std::vector<std::string> allowed,
                 const std::string& why = "");

// `flag` was given too: "with --save FILE"; given "without --save".
Condition with_flag(const CLI::App& app, const char* flag, const std::string& value_name);

// Under mpirun (comm/communicator.h launched_by_mpi): "under mpirun (data-parallel ranks)".
Condition under_mpirun();

}  // namespace vdnn::cli
