// Flag rules (tools/flag_rules.h): a flag given where it does not apply is refused naming it and
// the setting that makes it moot. The mechanism on a small command; every subcommand's table walked
// (each rule names a flag the command has, and its message names it); a representative set of real
// command lines parsed in-process; and the `vdnn` binary's exit code and one line.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "cli/cli_run.h"
#include "commands.h"
#include "flag_rules.h"
#include "vdnn/error.h"

namespace vdnn::test {
namespace test_flag_rules {

using cli::Command;
using cli::FlagRules;

// The message check() throws for `line`, "" when it throws nothing.
std::string refusal(const FlagRules& rules) {
  try {
    rules.check();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A small command: --optimizer sgd|adamw, --momentum (sgd only), --save, --every (needs --save).
struct Toy {
  CLI::App app;
  std::string optimizer = "sgd", save;
  double momentum = 0.9;
  int every = 0;
  FlagRules rules{app};

  explicit Toy(const std::string& line) {
    app.add_option("--optimizer", optimizer)->capture_default_str();
    app.add_option("--momentum", momentum)->capture_default_str();
    app.add_option("--save", save);
    app.add_option("--every", every);
    rules.add({"--momentum"}, cli::one_of("--optimizer", optimizer, {"sgd"}, "adamw has moments"));
    rules.add({"--every"}, cli::with_flag(app, "--save", "FILE"));
    rules.add({"--every", "--momentum"}, cli::one_of("--optimizer", optimizer, {"sgd", "adamw"}));
    app.parse(line, /*program_name_included=*/false);
  }
};

TEST(FlagRules, AFlagGivenWhereItDoesNotApplyIsRefusedInOneLineNamingItAndWhy) {
  EXPECT_EQ(refusal(Toy("--optimizer adamw --momentum 0.5").rules),
            "--momentum applies only with --optimizer sgd (adamw has moments); it was given with --optimizer adamw");
  EXPECT_EQ(refusal(Toy("--every 3").rules), "--every applies only with --save FILE; it was given without --save");
}

TEST(FlagRules, AFlagLeftOutOrWhereItAppliesIsNotRefused) {
  EXPECT_EQ(refusal(Toy("--optimizer adamw").rules), "") << "a default (--momentum 0.9) never counts as given";
  EXPECT_EQ(refusal(Toy("--momentum 0.5").rules), "");
  EXPECT_EQ(refusal(Toy("--save x --every 3 --optimizer sgd").rules), "");
}

TEST(FlagRules, TheFirstRuleInTheTableThatFailsIsTheOneNamed) {
  EXPECT_EQ(refusal(Toy("--every 3 --optimizer adamw --momentum 0.5").rules).rfind("--momentum applies only", 0), 0u)
      << "--momentum's rule was added first";
}

TEST(FlagRules, ARuleForAFlagTheCommandDoesNotHaveIsABugFoundWhenDeclared) {
  CLI::App app;
  std::string policy = "none";
  app.add_option("--policy", policy);
  FlagRules rules(app);
  EXPECT_THROW(rules.add({"--host-memroy"}, cli::one_of("--policy", policy, {"all"})), InternalError);
}

// Every subcommand, declared as tools/main.cc declares it, with its table.
struct Commands {
  CLI::App top;
  std::map<std::string, Command> by_name;

  Commands() {
    const std::map<std::string, std::function<Command(CLI::App&)>> adders = {
        {"train", cli::add_train_command},     {"models", cli::add_models_command}, {"plan", cli::add_plan_command},
        {"profile", cli::add_profile_command}, {"infer", cli::add_infer_command},   {"export", cli::add_export_command},
        {"load", cli::add_load_command}};
    for (const auto& [name, add] : adders) by_name.emplace(name, add(*top.add_subcommand(name)));
  }
};

// check() of the command `line` names, after parsing it on fresh commands (a parse leaves its values
// bound); "" when nothing is refused.
std::string refusal_of(const std::string& line) {
  Commands c;
  c.top.parse(line, /*program_name_included=*/false);
  return refusal(c.by_name.at(line.substr(0, line.find(' '))).rules);
}

TEST(FlagRules, EveryRuleOfEveryCommandNamesAFlagOfThatCommandAndItsMessageNamesIt) {
  Commands commands;
  commands.top.parse("", false);  // every value its default: what `given` reads
  size_t rules = 0;
  for (const auto& [name, command] : commands.by_name) {
    const CLI::App* sub = commands.top.get_subcommand(name);
    std::set<std::string> seen;
    for (const cli::FlagRule& rule : command.rules.rules()) {
      ++rules;
      EXPECT_NE(sub->get_option_no_throw(rule.flag), nullptr) << name << " " << rule.flag;
      EXPECT_EQ(rule.flag.rfind("--", 0), 0u) << name << " " << rule.flag;
      EXPECT_TRUE(seen.insert(rule.flag + " " + rule.condition.applies).second) << name << ": twice: " << rule.flag;
      EXPECT_FALSE(rule.condition.applies.empty()) << name << " " << rule.flag;
      const std::string given = rule.condition.given();
      EXPECT_FALSE(given.empty()) << name << " " << rule.flag;
      const std::string message = FlagRules::message(rule, given);
      EXPECT_EQ(message.rfind(rule.flag + " applies only ", 0), 0u) << message;
      EXPECT_NE(message.find("; it was given " + given), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
    if (name != "models") EXPECT_FALSE(command.rules.rules().empty()) << name << " has flags that do not always apply";
  }
  EXPECT_GE(rules, 50u) << "the tables lost rules";
}

TEST(FlagRules, RepresentativeCommandLinesAreRefusedNamingTheFlagAndTheSettingThatMakesItMoot) {
  const std::string m = " --model fmnist_cnn";
  const std::map<std::string, std::string> refused = {
      {"train --data synthetic --mean 0.5",
       "--mean applies only when --data is an image folder (DIR/<class>/... or DIR/train/<class>/...); it was given "
       "with --data synthetic"},
      {"train --vocab 100", "--vocab applies only when --data is token ids"},
      {"train --synthetic-samples 64",
       "--synthetic-samples applies only with --data synthetic; it was given with "
       "--data fashion-mnist"},
      {"train --host-memory 1GiB",
       "--host-memory applies only with --policy all, conv, dyn or auto (the policies that offload); it was given "
       "with --policy none"},
      {"train --policy none --link-bandwidth 8", "--link-bandwidth applies only with --policy all, conv, dyn or auto"},
      {"train --policy auto --prefetch ahead", "it was given with --policy auto"},
      {"train --policy auto --conv-algo direct", "--conv-algo applies only with --policy none, all or conv"},
      {"train --policy all --costs c.json", "--costs applies only with --policy dyn or auto"},
      {"train --iterations 10 --epochs 3", "--epochs applies only without --iterations"},
      {"plan --inference --batches 1,8 --batch 64", "--batch applies only without --batches"},
      {"train --lr-step-epochs 3",
       "--lr-step-epochs applies only with --lr-schedule step; it was given with "
       "--lr-schedule cosine"},
      {"train --lr-schedule constant --min-lr 0.01", "--min-lr applies only with --lr-schedule cosine"},
      {"train --optimizer adamw --momentum 0.5", "--momentum applies only with --optimizer sgd"},
      {"train --beta2 0.95", "--beta2 applies only with --optimizer adamw; it was given with --optimizer sgd"},
      {"train --checkpoint-every 5", "--checkpoint-every applies only with --save"},
      {"train --bucket-size 1MiB",
       "--bucket-size applies only under mpirun (data-parallel ranks); it was given "
       "without mpirun"},
      {"train --verify-replicas", "--verify-replicas applies only under mpirun"},
      {"infer" + m + " --top-k 3", "--top-k applies only with --predictions"},
      {"infer" + m + " --host-memory 1GiB",
       "--host-memory applies only with --device-memory and --stream-weights "
       "auto (it holds the host copies of streamed weights); it was given "
       "without --device-memory"},
      {"infer" + m + " --device-memory 1GiB --stream-weights never --host-memory 1GiB",
       "it was given with --stream-weights never"},
      {"infer" + m + " --algo-cache a.json", "--algo-cache applies only with --conv-algo fastest"},
      {"infer" + m + " --seed 3", "--seed applies only with --data synthetic"},
      {"infer" + m + " --images x.npy --logits y.npy --std 0.5", "it was given with --images x.npy"},
      {"plan --inference --policy all", "--policy applies only to training plans; it was given with --inference"},
      {"plan --batches 1,8", "--batches applies only with --inference"},
      {"plan --device h200 --repeats 3", "--repeats applies only when the plan measures this CPU's costs"},
      {"plan --bucket-size 1MiB", "--bucket-size applies only to data-parallel plans"},
      {"plan --policy none --host-memory 1GiB", "it was given with --policy none and no --sweep"},
      {"plan --device h200 --policy dyn --no-slice-search", "--no-slice-search applies only with --policy auto"},
      {"profile --steps 3", "--steps applies only with --check"},
      {"profile --check none --device-memory 1GiB", "--device-memory applies only with --check dyn or auto"},
      {"load --split test --augment flip", "--augment applies only with --split train"},
      {"export --onnx x.onnx" + m + " --weights w.safetensors --seed 3", "--seed applies only without --weights"}};
  for (const auto& [line, fragment] : refused) {
    const std::string message = refusal_of(line);
    EXPECT_NE(message.find(fragment), std::string::npos) << line << "\n  refused with: '" << message << "'";
  }
}

TEST(FlagRules, TheSameFlagsWhereTheyApplyAreNotRefused) {
  for (const std::string line :
       {"train --data synthetic --synthetic-samples 64", "train --policy all --host-memory 1GiB --prefetch ahead",
        "train --policy dyn --costs c.json --link-bandwidth 8", "train --lr-schedule step --lr-step-epochs 3",
        "train --optimizer adamw --beta2 0.95", "train --save s.safetensors --checkpoint-every 5",
        "infer --model fmnist_cnn --predictions p.json --top-k 3",
        "infer --model fmnist_cnn --data synthetic --seed 3 --device-memory 1GiB --host-memory 1GiB",
        "plan --inference --batches 1,8", "plan --policy auto --device h200 --no-slice-search",
        "plan --ranks 2 --network ethernet-100g --bucket-size 1MiB", "plan --policy none --sweep --host-memory 1GiB",
        "profile --check dyn --device-memory 1GiB --steps 3", "load --augment flip",
        "export --onnx x.onnx --model fmnist_cnn --seed 3"})
    EXPECT_EQ(refusal_of(line), "") << line;
}

// Through the binary: one "error:" line, exit 1, before any work.
TEST(FlagRules, TheBinaryRefusesBeforeAnyWorkWithOneLineAndExitOne) {
  expect_user_error("train --data synthetic --iterations 1 --mean 0.5",
                    "error: --mean applies only when --data is an image folder");
  expect_user_error("plan --model vgg16 --device h200 --inference --sweep", "--sweep applies only to training plans");
}

}  // namespace test_flag_rules
}  // namespace vdnn::test
