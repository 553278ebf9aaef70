// report/scaling_chart.h — `vdnn plan --scaling-svg`: predicted data-parallel scaling efficiency
// against the number of ranks, one line per configuration.
//
// Model: a ScalingSeries is one configuration planned at several rank counts (the per-rank batch
// fixed, as PyTorch DDP's batch_size: weak scaling); its efficiency at N ranks is the one-rank
// step time over the N-rank step time (1: the all-reduce is free or wholly hidden). Two panels
// share x, the number of ranks on a log2 axis (one tick per count): the efficiency, and the
// fraction of the all-reduce hidden under compute (from 2 ranks), both from 0 to 100%. One
// polyline per series and panel with a dot per count (tooltip: ranks, step, all-reduce, hidden
// fraction); a series that does not fit its budget is drawn dashed; the legend is below.
//
//   std::vector<ScalingSeries> s = {{"none+fastest", true, {{1, true, 0.10, 0, 0}, {8, true, 0.12, 0.05, 0.6}}}};
//   write_text_file("scaling.svg", scaling_svg("vgg16, batch 64 per rank, a100-40gb, hdr-infiniband", s));
#pragma once

#include <string>
#include <vector>

namespace vdnn {

struct ScalingPoint {
  int ranks = 1;
  bool fits = true;
  double step_seconds = 0;        // predicted training step at this many ranks
  double all_reduce_seconds = 0;  // the comm stream's busy time
  double hidden = 0;              // fraction of it under compute-stream work
};

struct ScalingSeries {
  std::string label;                 // "none+fastest", "auto: ..."
  std::vector<ScalingPoint> points;  // by rank count; points[0] has 1 rank

  // points[0].step_seconds / points[i].step_seconds.
  double efficiency(size_t i) const;
};

std::string scaling_svg(const std::string& title, const std::vector<ScalingSeries>& series);

}  // namespace vdnn
