// python/src/ranks.cc — vdnn.rank(), vdnn.ranks(): the data-parallel ranks of this process.
//
// Model: started by `mpirun -np N python script.py`, every process is one rank of an MPI job
// (comm/communicator.h); otherwise the process is the only rank. The communicator is made on first
// use and lives until the interpreter exits (atexit: vdnn._end_ranks, registered by __init__.py).
// Every vdnn.Net made under mpirun trains data-parallel: its train_step all-reduces the gradients
// (each process passes its own shard: vdnn.batches gives it), vdnn.train shards the data itself.
//
//   mpirun -np 2 python -c "import vdnn; print(vdnn.rank(), 'of', vdnn.ranks())"
#include "bindings.h"
#include "comm/communicator.h"

namespace vdnn::python {
namespace {

std::unique_ptr<Communicator>& slot() {
  static std::unique_ptr<Communicator> comm;
  return comm;
}

}  // namespace

Communicator& process_communicator() {
  if (!slot()) slot() = make_communicator({});
  return *slot();
}

void bind_ranks(py::module_& m) {
  m.def(
      "rank", [] { return process_communicator().rank(); },
      "This process's rank in the data-parallel run (0 when not started by mpirun).");
  m.def(
      "ranks", [] { return process_communicator().size(); },
      "How many processes train together (mpirun -np N; 1 without mpirun).");
  m.def(
      "_end_ranks", [] { slot().reset(); }, "Ends this process's part in the run (MPI_Finalize); at exit.");
}

}  // namespace vdnn::python
