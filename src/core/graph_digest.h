// core/graph_digest.h — a fingerprint of what a graph computes, to tell whether two processes
// hold the same network (the ranks of a data-parallel run, comm/rank_agreement.h).
//
// Model: the SHA-256 of a text listing the input shape, the classes and, per node in order, the
// layer's type, its inputs (by value number), its output shape, how many slices of the batch it
// runs in, each parameter's name, shape, initialisation and roles (trainable, decayed), and every
// setting the layer was configured with (Layer::settings(): each field its description's
// LayerConfig read, with the value it took, a default included). So two graphs digest alike when
// they are wired alike with the same shapes, parameters and attributes: another model, another
// --input or --classes, another layer, kernel, stride or width differs, and so does an attribute
// that changes no shape (a dropout rate, a batch norm's epsilon or momentum, attention's causal
// flag, GELU's approximation, a layer norm's epsilon). A field written with its default value
// digests as the field left out. Layer and graph names are left out (a renamed copy computes the
// same). A layer made in code rather than from a description (a rewrite's) has no settings: its
// shapes and parameters alone are digested.
//
//   bool same = graph_digest(a) == graph_digest(b);   // each 64 hex characters
#pragma once

#include <string>

#include "core/graph.h"

namespace vdnn {

std::string graph_digest(const Graph& graph);

}  // namespace vdnn
