#include "data_flags.h"

#include <filesystem>
#include <initializer_list>
#include <system_error>

namespace vdnn::cli {
namespace {

bool named_data_set(const std::string& data) { return data == "fashion-mnist" || data == "synthetic"; }

bool is_folder_path(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

// What a folder or file --data names holds, in words: "(CIFAR binary batches)".
const char* layout_words(DataLayout layout) {
  switch (layout) {
    case DataLayout::kCifar:
      return " (CIFAR binary batches)";
    case DataLayout::kSplitFolders:
    case DataLayout::kImageFolderRoot:
      return " (image folders)";
    case DataLayout::kIdx:
      return " (Fashion-MNIST IDX files)";
    case DataLayout::kTokenFolder:
    case DataLayout::kTokenFile:
      return " (token ids)";
    case DataLayout::kText:
      return " (text)";
    default:
      return "";
  }
}

// The data the rules look at: --data with the command's data flags, or --images instead.
struct DataSeen {
  const std::string* data;
  const DataSource* flags;
  const std::string* images;

  bool images_given() const { return images && !images->empty(); }
  // What --data names (data_source.h); an error naming --data when it names nothing.
  DataLayout layout() const {
    DataSource source = *flags;
    source.data = *data;
    return data_layout(source);
  }
  bool is(std::initializer_list<DataLayout> layouts) const {
    if (images_given()) return false;
    const DataLayout l = layout();
    for (DataLayout want : layouts)
      if (l == want) return true;
    return false;
  }
  // "with --data DIR (CIFAR binary batches)"; `describe` false: without reading what DIR holds.
  std::string given(bool describe = true) const {
    if (images_given()) return "with --images " + *images + " (which replaces --data)";
    if (named_data_set(*data)) return "with --data " + *data;
    if (!describe) return "with --data " + *data + (is_folder_path(*data) ? ", a folder" : "");
    return "with --data " + *data + layout_words(layout());
  }
};

void add_if_declared(FlagRules& rules, const CLI::App& app, std::initializer_list<const char*> flags,
                     const Condition& condition) {
  for (const char* flag : flags)
    if (app.get_option_no_throw(flag) != nullptr) rules.add({flag}, condition);
}

}  // namespace

void add_data_rules(FlagRules& rules, const CLI::App& app, const DataFlagsUse& use) {
  const DataSeen seen{&use.data, &use.flags, use.images};
  add_if_declared(rules, app, {"--mean", "--std", "--skip-bad-images"},
                  {"when --data is an image folder (DIR/<class>/... or DIR/train/<class>/...)",
                   [seen] {
                     return seen.is({DataLayout::kSplitFolders, DataLayout::kImageFolderRoot});
                   },
                   [seen] { return seen.given(); }});
  add_if_declared(rules, app, {"--vocab"},
                  {"when --data is token ids (nanoGPT's folder of train.bin and val.bin, or a FILE.bin)",
                   [seen] {
                     return seen.is({DataLayout::kTokenFolder, DataLayout::kTokenFile});
                   },
                   [seen] { return seen.given(); }});
  add_if_declared(rules, app, {"--data-format"},
                  {"when --data names a file (token ids or text)",
                   [seen] {
                     return !seen.images_given() && !named_data_set(*seen.data) &&
                            !is_folder_path(*seen.data);
                   },
                   [seen] { return seen.given(/*describe=*/false); }});
  add_if_declared(rules, app, {"--synthetic-samples"},
                  {"with --data synthetic", [seen] { return !seen.images_given() && *seen.data == "synthetic"; },
                   [seen] { return seen.given(); }});
}

}  // namespace vdnn::cli
