// Every command on models whose layers read "data" directly (issue 15): a loss on the input
// crashed `vdnn train`, CPU `plan` and `profile` with SIGSEGV while the model checker and the
// Titan X plan accepted it. Each command must finish with exit 0 (these models are valid), never a
// signal; `train` refuses the two without parameters in one line (issue 42: nothing to learn), and
// they are inferred with an empty weights file.
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "io/safetensors.h"

namespace vdnn::test {
namespace test_cli_input_readers {

struct InputModel {
  const char* name;
  bool trainable;  // has parameters
  const char* json;
};

constexpr InputModel kModels[] = {
    {"loss_on_data", false, R"({"name": "loss_on_data", "input": [10], "classes": 10,
      "layers": [{"name": "loss", "type": "softmax_cross_entropy", "inputs": ["data"]}]})"},
    {"loss_on_join_of_data", false, R"({"name": "loss_on_join_of_data", "input": [10], "classes": 10,
      "layers": [{"name": "sum", "type": "add", "inputs": ["data", "data"]},
                 {"name": "loss", "type": "softmax_cross_entropy"}]})"},
    {"fc_and_data_joined", true, R"({"name": "fc_and_data_joined", "input": [10], "classes": 10,
      "layers": [{"name": "fc", "type": "fc", "units": 10},
                 {"name": "relu", "type": "relu", "inputs": ["data"]},
                 {"name": "sum", "type": "add", "inputs": ["fc", "relu", "data"]},
                 {"name": "loss", "type": "softmax_cross_entropy"}]})"},
};

TEST(CliInputReaders, EveryCommandFinishesOnModelsThatReadTheInputDirectly) {
  const auto dir = temp_dir("input_readers");
  for (const InputModel& m : kModels) {
    const std::string file = (dir / (std::string(m.name) + ".json")).string();
    std::ofstream(file) << m.json;
    const std::string model = " --model " + file + " --batch 4";
    const std::string weights = (dir / (std::string(m.name) + ".safetensors")).string();
    const std::string train =
        "train --data synthetic --synthetic-samples 12 --iterations 3 --progress none --policy all --save " + weights;
    std::vector<std::string> commands{"infer --data synthetic --synthetic-samples 12 --weights " + weights,
                                      "plan --device titan-x-maxwell"};
    if (m.trainable) {
      commands.insert(commands.begin(), train);
    } else {
      expect_user_error(train + model, "model '" + std::string(m.name) + "' has no trainable parameters");
      write_safetensors(weights, SafeTensors{});
    }
    if (&m == &kModels[0]) {  // the commands that measure kernels take about 2 s each
      commands.push_back("plan --repeats 1");
      commands.push_back("profile --repeats 1 --progress none");
    }
    for (const std::string& args : commands) {
      const CliRun r = vdnn(args + model);
      EXPECT_EQ(r.exit_code, 0) << m.name << ": vdnn " << args << "\n" << r.output;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace test_cli_input_readers
}  // namespace vdnn::test
