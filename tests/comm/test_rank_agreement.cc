// comm/rank_agreement.h without MPI: rank 0 of two whose peer's settings are given, so each way
// two ranks can differ is refused in one line naming what differs and both values.
#include <gtest/gtest.h>

#include "comm/rank_agreement.h"

namespace vdnn {
namespace test_rank_agreement {

// A communicator of two ranks, this one rank 0: the gather brings this rank's records and
// `peer`'s (empty: a copy of this rank's). Its other collectives are not used here.
class TwoRanks final : public Communicator {
 public:
  explicit TwoRanks(std::string peer = "") : peer_(std::move(peer)) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const char* name() const override { return "two"; }
  void all_reduce_sum(std::span<const ReduceBuffer>, float) override {}
  void sum_host(double*, int) override {}
  void broadcast_host(void*, size_t, int) override {}
  std::vector<std::string> gather_strings(const std::string& text) override {
    sent = text;
    return {text, peer_.empty() ? text : peer_};
  }
  [[noreturn]] void abort(int) override { std::abort(); }
  std::string sent;  // what this rank gave the gather

 private:
  std::string peer_;
};

// The records a rank holding `settings` in `call` gives the gather.
std::string records_of(const std::vector<RankSetting>& settings, const std::string& call = "") {
  TwoRanks alone;
  check_ranks_agree(alone, settings, call);
  return alone.sent;
}

// The refusal rank 0 holding `mine` in `my_call` makes when rank 1 holds `theirs` in `their_call`
// ("" when none).
std::string refusal(const std::vector<RankSetting>& mine, const std::vector<RankSetting>& theirs,
                    const std::string& my_call = "", const std::string& their_call = "") {
  TwoRanks two(records_of(theirs, their_call));
  try {
    check_ranks_agree(two, mine, my_call);
  } catch (const RanksDisagree& e) {
    return e.what();
  }
  return "";
}

const std::vector<RankSetting> kRun = {
    {"the model", "fmnist_cnn 3fa1b2c3d4e5f607"}, {"--batch", "32"}, {"--lr", "0.05"}};

TEST(RankAgreement, RanksStartedAlikeGoOn) {
  EXPECT_EQ(refusal(kRun, kRun), "");
  EXPECT_EQ(records_of(kRun).size() % records_of({{"--batch", "32"}}).size(), 0u) << "fixed-size records";
  std::unique_ptr<Communicator> one = make_single_rank();
  check_ranks_agree(*one, kRun);  // one rank: nothing to compare
}

TEST(RankAgreement, TheFirstSettingThatDiffersIsNamedWithBothValues) {
  std::vector<RankSetting> other = kRun;
  other[1].value = "16";
  other[2].value = "0.1";
  EXPECT_EQ(refusal(kRun, other), "the ranks were started differently: --batch is 32 on rank 0 but 16 on rank 1");
  other = kRun;
  other[0].value = "fmnist_dag 0011223344556677";
  EXPECT_EQ(refusal(kRun, other),
            "the ranks were started differently: the model is fmnist_cnn 3fa1b2c3d4e5f607 on rank 0 but fmnist_dag "
            "0011223344556677 on rank 1");
}

TEST(RankAgreement, ValuesAlikeInTheirShownPartAreToldApartByTheirDigest) {
  const std::string shown(64, 'x');
  const std::string message = refusal({{"the data", shown + "a"}}, {{"the data", shown + "b"}});
  EXPECT_EQ(message.rfind("the ranks were started differently: the data is " + shown + " (sha256 ", 0), 0u) << message;
  EXPECT_NE(message.find("...) on rank 0 but " + shown + " (sha256 "), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST(RankAgreement, RanksComparingOtherListsRunDifferentPrograms) {
  EXPECT_EQ(refusal(kRun, {{"--batch", "32"}}),
            "the ranks run different programs: rank 0 compares 3 settings, rank 1 1");
}

// Issue 42: a rank in train_step and one in forward_backward entered collectives that did not
// match (MPI_ERR_TRUNCATE, then a hang); the call is compared before anything else.
TEST(RankAgreement, RanksInDifferentCallsAreToldSoBeforeTheirSettings) {
  const std::vector<RankSetting> step = {{"the sample count", "32"}};
  EXPECT_EQ(refusal(step, step, "train_step", "train_step"), "");
  EXPECT_EQ(refusal(step, step, "train_step", "forward_backward"),
            "the ranks are in different calls: rank 0 called train_step but rank 1 called forward_backward");
  EXPECT_EQ(refusal(step, kRun, "train_step", ""),
            "the ranks are in different calls: rank 0 called train_step but rank 1 called a Net's or a run's "
            "start-up check")
      << "another call with another number of settings: still the call is named";
  EXPECT_EQ(refusal(kRun, step, "", "set_weights"),
            "the ranks are in different calls: rank 0 called a Net's or a run's start-up check but rank 1 called "
            "set_weights");
}

TEST(RankAgreement, AStepsSettingThatDiffersIsNamedWithItsCall) {
  EXPECT_EQ(
      refusal({{"the step", "3"}, {"lr", "0.1"}}, {{"the step", "3"}, {"lr", "0.05"}}, "train_step", "train_step"),
      "the ranks' train_step calls differ: lr is 0.1 on rank 0 but 0.05 on rank 1");
  EXPECT_EQ(refusal({{"the weights' sha256", "0011"}}, {{"the weights' sha256", "2233"}}, "set_weights", "set_weights"),
            "the ranks' set_weights calls differ: the weights' sha256 is 0011 on rank 0 but 2233 on rank 1");
}

}  // namespace test_rank_agreement
}  // namespace vdnn
