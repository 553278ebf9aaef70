// util/did_you_mean.h: the names suggested for a mistyped model, flag or command.
#include <gtest/gtest.h>

#include "util/did_you_mean.h"

namespace vdnn {
namespace test_did_you_mean {

TEST(DidYouMean, EditDistanceCountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(edit_distance("resnet18", "resnet18"), 0);
  EXPECT_EQ(edit_distance("resnt18", "resnet18"), 1);    // a letter left out
  EXPECT_EQ(edit_distance("resnet188", "resnet18"), 1);  // one too many
  EXPECT_EQ(edit_distance("resnet19", "resnet18"), 1);   // one wrong
  EXPECT_EQ(edit_distance("rsenet18", "resnet18"), 1);   // two swapped
  EXPECT_EQ(edit_distance("ResNet18", "resnet18"), 0);   // case ignored
  EXPECT_EQ(edit_distance("", "abc"), 3);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
}

TEST(DidYouMean, SuggestsTheClosestKnownNamesOnly) {
  const std::vector<std::string> models = {"alexnet", "fmnist_cnn", "fmnist_dag", "resnet18", "resnet50", "vgg16"};
  EXPECT_EQ(closest_names("resnt18", models), std::vector<std::string>{"resnet18"});
  EXPECT_EQ(closest_names("fmnist_cn", models), std::vector<std::string>{"fmnist_cnn"});
  EXPECT_EQ(closest_names("resnet", models), (std::vector<std::string>{"resnet18", "resnet50"}));  // prefixes
  EXPECT_TRUE(closest_names("transformer", models).empty());
  EXPECT_TRUE(closest_names("vgg16", models).empty());  // a known name needs no suggestion
  EXPECT_EQ(did_you_mean("alexnt", models), "did you mean 'alexnet'?");
  EXPECT_EQ(did_you_mean("fmnist_xyz", models), "did you mean 'fmnist_cnn' or 'fmnist_dag'?");
  EXPECT_EQ(did_you_mean("bert", models), "");
  const std::vector<std::string> flags = {"--epochs", "--lr", "--lr-schedule", "--lr-gamma", "--device-memory"};
  EXPECT_EQ(did_you_mean("--epoch", flags), "did you mean '--epochs'?");
  EXPECT_EQ(did_you_mean("--lr-sched", flags), "did you mean '--lr-schedule'?");
  EXPECT_EQ(did_you_mean("--device-mem", flags), "did you mean '--device-memory'?");
  EXPECT_EQ(did_you_mean("--policy", flags), "");
}

}  // namespace test_did_you_mean
}  // namespace vdnn
