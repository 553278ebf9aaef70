// tools/data_flags.h — the flags every command that reads --data takes for image folders
// (data/image_folder.h): --mean, --std (per-channel normalization) and --skip-bad-images; and for
// token data (data/token_file.h, data/char_text.h): --vocab and --data-format; and the rules
// (tools/flag_rules.h) that refuse each of them, and --synthetic-samples, where --data is not the
// kind of data it is for.
//
//   DataSource source;
//   add_image_folder_flags(app, source);   // after parsing: source.mean, source.std, source.skip_bad_images
//   add_token_data_flags(app, source);     // source.vocab, source.format
//   add_data_rules(rules, {.data = source.data, .flags = source});   // --mean with --data synthetic: refused
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "data/data_source.h"
#include "flag_rules.h"

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

inline void add_token_data_flags(CLI::App& app, DataSource& source) {
  app.add_option("--vocab", source.vocab,
                 "token files (.bin): the vocabulary size, every id must be below it (default: the model's class "
                 "count, 50257 for GPT-2; nanoGPT's meta.pkl names it as vocab_size)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--data-format", source.format,
                 "what the file --data names holds: auto (by its name: FILE.bin nanoGPT's uint16 token ids, FILE.txt "
                 "UTF-8 text read as characters), tokens or text")
      ->check(CLI::IsMember({"auto", "tokens", "text"}))
      ->capture_default_str();
}

// What the data rules look at, bound before parsing: --data (train and load keep it apart from
// `flags`), the data flags, and infer's --images (null elsewhere), which replaces --data.
struct DataFlagsUse {
  const std::string& data;
  const DataSource& flags;
  const std::string* images = nullptr;
};

// Rules for the flags of the kinds of data: --mean, --std and --skip-bad-images with image folders,
// --vocab with token ids, --data-format with a file, --synthetic-samples with --data synthetic; each
// only for the flags the command has.
void add_data_rules(FlagRules& rules, const CLI::App& app, const DataFlagsUse& use);

}  // namespace vdnn::cli
