// tools/commands.h — the `vdnn` subcommands; each registers its flags on a CLI11 subcommand and
// returns the function that runs it after parsing.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace vdnn::cli {

using Runner = std::function<int()>;

Runner add_train_command(CLI::App& app);
Runner add_models_command(CLI::App& app);
Runner add_plan_command(CLI::App& app);
Runner add_profile_command(CLI::App& app);
Runner add_infer_command(CLI::App& app);
Runner add_export_command(CLI::App& app);
Runner add_load_command(CLI::App& app);

}  // namespace vdnn::cli
