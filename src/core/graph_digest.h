// core/graph_digest.h — a fingerprint of what a graph computes, to tell whether two processes
// hold the same network (the ranks of a data-parallel run, comm/rank_agreement.h).
//
// Model: the SHA-256 of a text listing the input shape, the classes and, per node in order, the
// layer's type, its inputs (by value number), its output shape, how many slices of the batch it
// runs in and each parameter's name, shape, initialisation and roles (trainable, decayed). So two
// graphs digest alike when they are wired alike with the same shapes and parameters: another model,
// another --input or --classes, another layer, kernel, stride or width differs. Layer and graph
// names are left out (a renamed copy computes the same), and so are attributes that change no
// shape (a dropout ratio, a batch norm's epsilon).
//
//   bool same = graph_digest(a) == graph_digest(b);   // each 64 hex characters
#pragma once

#include <string>

#include "core/graph.h"

namespace vdnn {

std::string graph_digest(const Graph& graph);

}  // namespace vdnn
