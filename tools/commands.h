// tools/commands.h — the `vdnn` subcommands; each registers its flags on a CLI11 subcommand and
// returns the function that runs it after parsing, with the rules of its flags that apply only in
// some configurations (tools/flag_rules.h), which tools/main.cc checks first.
//
//   Command train = add_train_command(*app.add_subcommand("train", "train a network"));
//   app.parse(argc, argv);
//   train.rules.check();   // a flag given where it does not apply: vdnn::Error naming it
//   return train.run();
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "flag_rules.h"

namespace vdnn::cli {

using Runner = std::function<int()>;

struct Command {
  Runner run;
  FlagRules rules;
};

Command add_train_command(CLI::App& app);
Command add_models_command(CLI::App& app);
Command add_plan_command(CLI::App& app);
Command add_profile_command(CLI::App& app);
Command add_infer_command(CLI::App& app);
Command add_export_command(CLI::App& app);
Command add_load_command(CLI::App& app);

}  // namespace vdnn::cli
