// util/did_you_mean.h — "did you mean ...": the known names closest to a mistyped one.
//
// Model: closeness is the optimal string alignment distance (Levenshtein's insertions, deletions
// and substitutions, plus a swap of two neighbouring characters, each costing 1; case ignored), as
// git's "did you mean" and Python's argparse suggestions work from an edit distance. A name is
// suggested when its distance is at most max(1, length / 3) of the longer of the two (a third of
// the letters wrong is still a typo; more is another word), or when the typed text is a prefix of
// it of at least 3 characters ("--lr-sched" for "--lr-schedule"). The closest win; at most three
// are named, ties in the order given.
//
//   std::vector<std::string> s = vdnn::closest_names("resnt18", {"resnet18", "resnet50", "vgg16"});  // {"resnet18"}
//   std::string hint = vdnn::did_you_mean("resnt18", {"resnet18", "vgg16"});   // "did you mean 'resnet18'?"
//   std::string none = vdnn::did_you_mean("transformer", {"resnet18"});         // ""
#pragma once

#include <string>
#include <vector>

namespace vdnn {

// The optimal string alignment distance between a and b, case ignored.
int edit_distance(const std::string& a, const std::string& b);

// The known names close enough to `typed` to be what was meant, closest first (at most 3).
std::vector<std::string> closest_names(const std::string& typed, const std::vector<std::string>& known);

// "did you mean 'x'?" or "did you mean 'x' or 'y'?"; "" when no name is close.
std::string did_you_mean(const std::string& typed, const std::vector<std::string>& known);

}  // namespace vdnn
