// vdnn/vdnn.h — libvdnn's public API in one include (find_package(vdnn), target vdnn::vdnn).
//
// Model: the names below are the public API — kept stable, and changed only with a note in
// docs/design.md ("libvdnn: the installed library"). The headers they live in sit under
// <prefix>/include/vdnn/internal/ (the library's own src/ tree, installed so this header compiles);
// everything else declared there is internal and may change in any commit.
//   models     Graph, Shape, load_model, parse_model_text, ModelOptions, ModelBuilder, model_names
//   data       Dataset, make_synthetic, load_fashion_mnist
//   planning   Planner, Configuration, Evaluation, Policy, SyncMode, Prefetch, PlanInputs,
//              plan_inputs, load_device_profile, device_profile_names
//   targets    BackendTarget, backend_target, backend_targets, TargetFacts, AlgoOption, CostOptions
//              (a backend's sizes, algorithms and costs without a device)
//   running    Net, NetOptions, BackendKind, Trainer, TrainConfig, TrainResult
//   ranks      Communicator, make_communicator, CommOptions (data parallel: under mpirun, give
//              NetOptions::comm the communicator and each process trains its share)
//   errors     Error (anything the caller can fix; one line naming what and what is valid),
//              InternalError (a bug in vdnn)
//   data dir   set_data_dir, data_folder (where shipped models and profiles are found)
//
//   vdnn::Graph g = vdnn::load_model("fmnist_cnn");
//   vdnn::PlanInputs in = vdnn::plan_inputs(g, 32, {.device = "cpu", .repeats = 1});
//   vdnn::Planner planner(g, in.value_bytes, in.facts, in.costs, vdnn::SyncMode::kEvent);
//   vdnn::Evaluation e = planner.evaluate({vdnn::Policy::kAll, in.costs.fastest()}, 24 << 20);
//   vdnn::Net net(vdnn::load_model("fmnist_cnn"), {.batch = 32, .policy = vdnn::Policy::kAll,
//                                                  .device_memory = 24 << 20});
//   vdnn::Trainer(net, {.iterations = 5}).run(vdnn::make_synthetic(256, 1, 28, 28, 10, 1), nullptr);
//   // mpirun -np 2 ./my_program: the same program on every rank, gradients all-reduced
//   std::unique_ptr<vdnn::Communicator> comm = vdnn::make_communicator({});
//   vdnn::Net ranked(vdnn::load_model("fmnist_cnn"), {.batch = 32, .comm = comm.get()});
// examples/ builds this against an installed vdnn.
#pragma once

#include "vdnn/data_dir.h"
#include "vdnn/error.h"

#include "backend_api/backend.h"
#include "backend_api/backend_target.h"
#include "backends/backend_targets.h"
#include "comm/communicator.h"
#include "core/graph.h"
#include "data/dataset.h"
#include "data/fashion_mnist.h"
#include "data/synthetic.h"
#include "io/model_file.h"
#include "plan/device_profile.h"
#include "plan/planner.h"
#include "plan/policy.h"
#include "planning/plan_source.h"
#include "runtime/net.h"
#include "runtime/trainer.h"

// The installed package's data directory, from the vdnn::vdnn target (vdnnTargets.cmake), so a
// program built against an install finds its models and profiles wherever the prefix was moved.
#ifdef VDNN_PACKAGE_DATA_DIR
namespace vdnn::detail {
inline const bool package_data_dir_registered = register_package_data_dir(VDNN_PACKAGE_DATA_DIR);
}  // namespace vdnn::detail
#endif
