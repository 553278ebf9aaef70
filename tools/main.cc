// vdnn — command-line entry point.
//
//   vdnn train [--model fmnist_cnn] [--data fashion-mnist|synthetic|DIR] [--epochs N] ...
//   vdnn models
//   vdnn plan --model vgg16 --batch 256 --device titan-x-maxwell
//   vdnn profile --model fmnist_cnn --batch 128 --save costs.json
//   vdnn infer --model fmnist_cnn --weights run.safetensors --data fashion-mnist
//   vdnn export --onnx out.onnx --model fmnist_cnn --weights run.safetensors
//   vdnn load --data /data/imagenet --input 3x224x224 --augment imagenet --data-threads 2
// User errors print one line "error: ..." and exit 1; a bug in vdnn exits 70.
#include <cstdio>
#include <iostream>
#include <map>

#include <oneapi/dnnl/dnnl.hpp>

#include "commands.h"
#include "numeric_flags.h"
#include "util/host_memory.h"
#include "util/interrupt.h"
#include "vdnn/error.h"

int main(int argc, char** argv) {
  vdnn::install_interrupt_handler();  // Ctrl-C: no temporary file left behind, exit 130
  CLI::App app{"vdnn: train deep networks larger than the accelerator's memory"};
  app.require_subcommand(1);
  std::map<CLI::App*, vdnn::cli::Runner> runners;
  auto add = [&](const char* name, const char* help, auto adder) {
    CLI::App* sub = app.add_subcommand(name, help);
    runners[sub] = adder(*sub);
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
  vdnn::cli::check_numeric_flags(app);  // no NaN, no saturated integers, on any numeric flag
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
  } catch (const vdnn::Error& e) {
    std::fflush(stdout);
    std::cerr << "error: " << e.what() << "\n";
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
