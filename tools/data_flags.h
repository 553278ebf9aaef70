// tools/data_flags.h — the flags every command that reads --data takes for image folders
// (data/image_folder.h): --mean, --std (per-channel normalization) and --skip-bad-images.
//
//   DataSource source;
//   add_image_folder_flags(app, source);   // after parsing: source.mean, source.std, source.skip_bad_images
#pragma once

#include <CLI/CLI.hpp>

#include "data/data_source.h"

namespace vdnn::cli {

inline void add_image_folder_flags(CLI::App& app, DataSource& source) {
  app.add_option("--mean", source.mean,
                 "image folders: per-channel mean of the pixels in 0..1, comma-separated (default: ImageNet's "
                 "0.485,0.456,0.406 for RGB, 0.5 for grey)")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--std", source.std,
                 "image folders: per-channel standard deviation, comma-separated (default: ImageNet's "
                 "0.229,0.224,0.225 for RGB, 0.5 for grey)")
      ->delimiter(',')
      ->check(CLI::Range(1e-6, 1.0));
  app.add_flag("--skip-bad-images", source.skip_bad_images,
               "image folders: leave out (or, found while training, replace) unreadable images with a warning "
               "and a count in the report, instead of stopping with an error naming the file");
}

}  // namespace vdnn::cli
