// vdnn — command-line entry point.
//
//   vdnn train [--model fmnist_cnn] [--data fashion-mnist|synthetic|DIR] [--epochs N] ...
//   vdnn models
//   vdnn plan --model vgg16 --batch 256 --device titan-x-maxwell
//   vdnn profile --model fmnist_cnn --batch 128 --save costs.json
//   vdnn infer --model fmnist_cnn --weights run.safetensors --data fashion-mnist
//   vdnn export --onnx out.onnx --model fmnist_cnn --weights run.safetensors
//   vdnn load --data /data/imagenet --input 3x224x224 --augment imagenet --data-threads 2
//   vdnn --version                 (or `vdnn version`): "vdnn 0.16.0", CMakeLists.txt's project version
// User errors print one line "error: ..." and exit 1; a bug in vdnn exits 70. A command line CLI11
// cannot parse exits with CLI11's code (105 and up); an unknown command or flag is one line naming
// it and the closest known names (util/did_you_mean.h).
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "commands.h"
#include "numeric_flags.h"
#include "util/did_you_mean.h"
#include "util/host_memory.h"
#include "util/interrupt.h"
#include "util/text_list.h"
#include "util/utf8.h"
#include "vdnn/error.h"
#include "vdnn/version.h"

namespace {

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

// `vdnn tran`: CLI11 would answer "A subcommand is required"; name the command and the closest.
// Returns CLI11's exit code for extra arguments, or 0 when argv[1] is a command or a flag.
int unknown_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return 0;
  const std::vector<std::string> known = command_names(app);
  const std::string typed = argv[1];
  for (const std::string& name : known)
    if (name == typed) return 0;
  const std::string hint = vdnn::did_you_mean(typed, known);
  std::cerr << "error: unknown command '" << typed << "'; " << (hint.empty() ? "" : hint + " ")
            << "(commands: " << vdnn::join_list(known) << "; `vdnn --help` says what each does)\n";
  return static_cast<int>(CLI::ExitCodes::ExtrasError);
}

// An argument CLI11 did not expect: an unknown flag gets one line naming it and the closest flags
// of its command; anything else CLI11's own message.
int report_parse_error(CLI::App& app, const CLI::ParseError& e) {
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return app.exit(e);
  CLI::App* where = &app;
  for (CLI::App* sub : app.get_subcommands([](CLI::App* a) { return a->parsed(); })) where = sub;
  std::string flag;
  for (const std::string& arg : app.remaining(/*recurse=*/true))  // CLI11 passes a command's extras up
    if (arg.size() > 1 && arg[0] == '-') flag = arg.substr(0, arg.find('='));
  if (flag.empty()) return app.exit(e);
  std::vector<std::string> known;
  for (const CLI::Option* o : where->get_options()) {
    for (const std::string& n : o->get_lnames()) known.push_back("--" + n);
    for (const std::string& n : o->get_snames()) known.push_back("-" + n);
  }
  const std::string command = where == &app ? "vdnn" : "vdnn " + where->get_name();
  const std::string hint = vdnn::did_you_mean(flag, known);
  std::cerr << "error: " << command << ": unknown flag " << flag << (hint.empty() ? "" : "; " + hint) << " (`"
            << command << " --help` lists its flags)\n";
  return e.get_exit_code();
}

}  // namespace

int main(int argc, char** argv) {
  vdnn::install_interrupt_handler();  // Ctrl-C: no temporary file left behind, exit 130
  CLI::App app{"vdnn: train deep networks larger than the accelerator's memory"};
  app.require_subcommand(1);
  const std::string version = std::string("vdnn ") + vdnn::version();
  app.set_version_flag("--version", version, "print vdnn's version and exit");
  std::map<CLI::App*, vdnn::cli::Command> commands;
  auto add = [&](const char* name, const char* help, auto adder) {
    CLI::App* sub = app.add_subcommand(name, help);
    commands.emplace(sub, adder(*sub));
  };
  add("train", "train a network", vdnn::cli::add_train_command);
  add("models", "list the shipped networks with parameters, FLOPs and feature-map bytes",
      vdnn::cli::add_models_command);
  add("plan", "will it fit, with which policy, at what cost: memory and predicted time before training",
      vdnn::cli::add_plan_command);
  add("profile", "measure every layer's forward/backward time and workspace per algorithm on this CPU",
      vdnn::cli::add_profile_command);
  add("infer", "test loss and accuracy of saved weights (a `train --save` checkpoint)", vdnn::cli::add_infer_command);
  add("export", "write a network and its weights as an ONNX model for inference (ONNX Runtime)",
      vdnn::cli::add_export_command);
  add("load", "read batches as `vdnn train` would, and nothing else: how fast the data loader is",
      vdnn::cli::add_load_command);
  CLI::App* version_command = app.add_subcommand("version", "print vdnn's version (as --version)");
  vdnn::cli::check_numeric_flags(app);  // no NaN, no saturated integers, on any numeric flag
  if (const int code = unknown_command(app, argc, argv)) return code;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return report_parse_error(app, e);
  }
  if (version_command->parsed()) {
    std::printf("%s\n", version.c_str());
    return 0;
  }
  try {
    for (auto& [sub, command] : commands)
      if (sub->parsed()) {
        command.rules.check();  // a flag given where it does not apply: one line naming it, exit 1
        return command.run();
      }
  } catch (const vdnn::Error& e) {
    std::fflush(stdout);
    std::cerr << "error: " << vdnn::as_one_line(e.what()) << "\n";  // a name with a newline stays one line
    return 1;
  } catch (const vdnn::InternalError& e) {
    std::cerr << "internal error (a bug in vdnn, please report): " << e.what() << "\n";
    return 70;
  } catch (const dnnl::error& e) {
    std::cerr << "internal error (oneDNN, please report): " << e.what() << "\n";
    return 70;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: " << vdnn::out_of_host_memory_message() << "\n";
    return 1;
  }
  return 0;
}
