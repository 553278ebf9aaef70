// `mpirun -np 2 vdnn train`: data-parallel training on this machine (Open MPI, two ranks on two
// cores). What issue 19 asks: identical weights on every rank after every step, 2 ranks x half
// batch against 1 rank x full batch, the same result from run to run and under every offload
// policy, a lost rank stopping the other with a message naming it, and --resume refusing another
// world size. Issue 42: ranks started with different flags, models, data or weights refused on
// every rank before the first step, and a rank stopped by SIGTERM telling the others at once.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/cli_run.h"
#include "data/fashion_mnist.h"
#include "runtime/checkpoint.h"

namespace vdnn::test {
namespace test_cli_data_parallel {

namespace fs = std::filesystem;

// mpirun as the tests need it: any user (CI runs as root), one OpenMP thread per rank, no core
// binding (two ranks share two cores), shared-memory transport without the single-copy mechanism
// (it needs ptrace rights some containers lack). In the AddressSanitizer build the ranks check
// everything but leaks: Open MPI keeps allocations past MPI_Finalize by design and unloads its
// plugins before LeakSanitizer runs, leaving stacks no suppression can name (vdnn's own code is
// leak-checked by every other test).
std::string mpirun(int ranks) {
  return "env ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" mpirun -np " + std::to_string(ranks) +
         " --oversubscribe --allow-run-as-root --bind-to none -x OMP_NUM_THREADS=1 "
         "--mca btl self,vader --mca btl_vader_single_copy_mechanism none ";
}

// A small convolutional net without batch norm or dropout: per-sample math only, so 2 ranks x
// half batch compute the same sums as 1 rank x full batch, in another order.
fs::path plain_net(const fs::path& dir) {
  const fs::path file = dir / "plain.json";
  std::ofstream(file) << R"({"name": "plain", "input": [1, 28, 28], "classes": 10, "layers": [
    {"name": "conv1", "type": "conv", "channels": 8, "kernel": 3, "pad": 1},
    {"name": "relu1", "type": "relu"},
    {"name": "pool1", "type": "max_pool", "kernel": 2},
    {"name": "conv2", "type": "conv", "channels": 16, "kernel": 3, "pad": 1},
    {"name": "relu2", "type": "relu"},
    {"name": "pool2", "type": "max_pool", "kernel": 2},
    {"name": "fc1", "type": "fc", "units": 64},
    {"name": "relu3", "type": "relu"},
    {"name": "fc2", "type": "fc", "units": "classes"},
    {"name": "loss", "type": "softmax_cross_entropy"}]})";
  return file;
}

const char* kTrain =
    " train --data synthetic --synthetic-samples 1024 --no-eval --lr-schedule constant --progress none ";

std::string hash_of(const CliRun& r) {
  const size_t at = r.output.find("weights_sha256 ");
  return at == std::string::npos ? "" : r.output.substr(at + 15, 64);
}

TEST(CliDataParallel, TwoRanksHoldOneWeightsAndMatchOneRankOfTheWholeBatch) {
  const fs::path dir = temp_dir("dp_match");
  const std::string model = plain_net(dir).string();
  const std::string args = std::string(kTrain) + "--model " + model + " --iterations 10 ";
  const CliRun two =
      run_command(mpirun(2) + VDNN_BINARY + args + "--batch 32 --verify-replicas --bucket-size 64KiB --report " +
                  (dir / "two.json").string());
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("data parallel: 2 ranks (mpi), --batch 32 per rank, global batch 64"), std::string::npos)
      << two.output;
  EXPECT_NE(two.output.find("the 2 ranks held identical weights after each of the 10 steps"), std::string::npos)
      << two.output;
  const CliRun one = vdnn(args + "--batch 64 --report " + (dir / "one.json").string());
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const nlohmann::json a = read_json_file(dir / "one.json"), b = read_json_file(dir / "two.json");
  ASSERT_EQ(a["step_losses"].size(), 10u);
  ASSERT_EQ(b["step_losses"].size(), 10u);
  double worst = 0;
  for (size_t i = 0; i < 10; ++i) {
    const double x = a["step_losses"][i].get<double>(), y = b["step_losses"][i].get<double>();
    worst = std::max(worst, std::abs(x - y) / std::abs(x));
  }
  EXPECT_LE(worst, 1e-5) << "2 ranks x 32 against 1 rank x 64, loss per step";
  std::printf("2 ranks x 32 vs 1 rank x 64: largest relative loss difference over 10 steps %.3g\n", worst);
  const nlohmann::json& dp = b["data_parallel"];
  EXPECT_EQ(dp["ranks"], 2);
  EXPECT_EQ(dp["global_batch"], 64);
  EXPECT_GT(dp["gradient_buckets"].get<int>(), 1);  // 64 KiB buckets: the all-reduce starts during backward
  ASSERT_EQ(dp["per_rank"].size(), 2u);
  EXPECT_GT(dp["per_rank"][1]["all_reduce_ms"].get<double>(), 0.0);
  // Deterministic reduction order: the same weights from run to run.
  const CliRun again = run_command(mpirun(2) + VDNN_BINARY + args + "--batch 32 --bucket-size 64KiB");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(hash_of(again), hash_of(two));
  EXPECT_EQ(hash_of(two).size(), 64u);
}

TEST(CliDataParallel, EveryOffloadPolicyGivesTheWeightsOfNone) {
  // fmnist_cnn: batch norm (running statistics averaged over the ranks) and dropout (per rank).
  const std::string args = std::string(kTrain) + "--iterations 4 --batch 32 --verify-replicas ";
  const CliRun none = run_command(mpirun(2) + VDNN_BINARY + args + "--policy none");
  ASSERT_EQ(none.exit_code, 0) << none.output;
  ASSERT_EQ(hash_of(none).size(), 64u) << none.output;
  for (const char* policy : {"--policy all --device-memory 24MiB", "--policy conv", "--policy all --sync layer",
                             "--policy all --prefetch ahead"}) {
    const CliRun r = run_command(mpirun(2) + VDNN_BINARY + args + policy);
    ASSERT_EQ(r.exit_code, 0) << policy << "\n" << r.output;
    EXPECT_EQ(hash_of(r), hash_of(none)) << policy;
    EXPECT_NE(r.output.find("identical weights after each of the 4 steps"), std::string::npos) << r.output;
  }
}

TEST(CliDataParallel, ResumeRefusesAnotherNumberOfRanks) {
  const fs::path dir = temp_dir("dp_resume");
  const std::string save = (dir / "run.safetensors").string();
  const std::string args = std::string(kTrain) + "--model " + plain_net(dir).string() + " --batch 32 ";
  const CliRun two = run_command(mpirun(2) + VDNN_BINARY + args + "--iterations 4 --save " + save);
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_EQ(read_checkpoint(save).ranks, 2);
  expect_user_error(args + "--iterations 8 --resume " + save, "written by a run of 2 ranks but this run has 1");
  const CliRun resumed = run_command(mpirun(2) + VDNN_BINARY + args + "--iterations 8 --resume " + save);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming"), std::string::npos) << resumed.output;
}

// The pid of rank `rank` among mpirun's children (Open MPI starts local ranks itself).
pid_t find_rank(pid_t launcher, int rank) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t parent = 0;
    rest >> state >> parent;
    if (parent != launcher) continue;
    std::ifstream env(entry.path() / "environ");
    std::string var;
    while (std::getline(env, var, '\0'))
      if (var == "OMPI_COMM_WORLD_RANK=" + std::to_string(rank)) return std::stoi(name);
  }
  return 0;
}

struct LostRankRun {
  int exit_code = -1;
  double seconds_after_fault = 0;
  std::string output;
};

// Starts a long 2-rank run that checkpoints every 2 steps, waits for its first checkpoint, sends
// `sig` to rank 1, and waits (at most 90 s) for mpirun to end.
LostRankRun lose_rank_one(const fs::path& dir, int sig, const std::string& extra) {
  const fs::path log = dir / "log.txt", save = dir / "run.safetensors";
  const std::string command = mpirun(2) + VDNN_BINARY + kTrain + "--model " + plain_net(dir).string() +
                              " --batch 32 --epochs 1000 --checkpoint-every 2 --save " + save.string() + " " + extra +
                              " > " + log.string() + " 2>&1";
  const pid_t launcher = fork();
  if (launcher == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  LostRankRun r;
  pid_t victim = 0;
  for (int i = 0; i < 600 && !(victim && fs::exists(save)); ++i) {  // 60 s to start and save once
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!victim) victim = find_rank(launcher, 1);
  }
  EXPECT_TRUE(victim && fs::exists(save)) << "the run did not start";
  if (victim) kill(victim, sig);
  const auto fault = std::chrono::steady_clock::now();
  int status = 0;
  for (int i = 0; i < 900; ++i) {
    if (waitpid(launcher, &status, WNOHANG) == launcher) {
      r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  r.seconds_after_fault = std::chrono::duration<double>(std::chrono::steady_clock::now() - fault).count();
  if (r.exit_code < 0) {  // still running: end it, and the test fails below
    kill(-launcher, SIGKILL);
    if (victim) kill(victim, SIGKILL);
    waitpid(launcher, &status, 0);
  }
  r.output = read_text_file(log.string());
  return r;
}

// The run ended on its own (not killed by the test) with a failure, within the issue's 60 s, and
// the checkpoint it wrote before the fault is whole.
void expect_stopped_in_time(const LostRankRun& r, const fs::path& dir) {
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_GE(r.exit_code, 0) << "still running " << r.seconds_after_fault << " s after the fault:\n" << r.output;
  EXPECT_LT(r.seconds_after_fault, 60.0);
  const Checkpoint c = read_checkpoint((dir / "run.safetensors").string());
  EXPECT_EQ(c.ranks, 2);
  EXPECT_GE(c.position.step, 2);
}

TEST(CliDataParallel, AKilledRankStopsTheOtherNamingItAndTheCheckpointSurvives) {
  const fs::path dir = temp_dir("dp_killed");
  const LostRankRun r = lose_rank_one(dir, SIGKILL, "");
  expect_stopped_in_time(r, dir);
  EXPECT_NE(r.output.find("rank 1"), std::string::npos) << r.output;  // mpirun names the process it lost
  std::printf("killed rank 1: mpirun exited %d after %.1f s\n", r.exit_code, r.seconds_after_fault);
}

TEST(CliDataParallel, AHungRankIsNamedByTheOtherAfterTheTimeout) {
  const fs::path dir = temp_dir("dp_hung");
  const LostRankRun r = lose_rank_one(dir, SIGSTOP, "--collective-timeout 5");
  expect_stopped_in_time(r, dir);
  EXPECT_NE(r.output.find("did not complete within 5 s (--collective-timeout"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lost rank 1 (silent for "), std::string::npos) << r.output;
  std::printf("stopped rank 1: rank 0 named it; mpirun exited %d after %.1f s\n", r.exit_code, r.seconds_after_fault);
}

TEST(CliDataParallel, ASigtermedRankTellsTheOthersAtOnce) {
  const fs::path dir = temp_dir("dp_sigterm");
  const LostRankRun r = lose_rank_one(dir, SIGTERM, "");  // the default --collective-timeout: 300 s
  expect_stopped_in_time(r, dir);
  EXPECT_LT(r.seconds_after_fault, 20.0) << r.output;
  EXPECT_NE(r.output.find("interrupted (SIGTERM) after step"), std::string::npos) << r.output;  // rank 1's own line
  // Rank 0 writes the checkpoints, maybe while rank 1 stops: rank 1 names the writer, not a step
  // it read from a file being replaced (the second probe saw it quote one step short).
  EXPECT_NE(r.output.find("rank 0 writes the checkpoints at " + (dir / "run.safetensors").string()),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find(" holds step "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("will never complete: rank 1 has left the run"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("every rank is alive"), std::string::npos) << r.output;
  std::printf("SIGTERM to rank 1: mpirun exited %d after %.1f s\n", r.exit_code, r.seconds_after_fault);
}

// Rank 0 started with `args`, rank 1 with `args` and `rank_one_extra` (mpirun's MPMD form), under
// a timeout, so a hang fails the test instead of stalling it.
CliRun two_ranks_started_differently(const std::string& args, const std::string& rank_one_extra) {
  return run_command("timeout 120 " + mpirun(1) + VDNN_BINARY + args + " : -np 1 " + VDNN_BINARY + args + " " +
                     rank_one_extra);
}

TEST(CliDataParallel, RanksStartedDifferentlyAreRefusedOnEveryRankNamingWhatDiffers) {
  const fs::path dir = temp_dir("dp_disagree");
  const std::string weights = (dir / "w.safetensors").string();  // one rank starts from it, the other from its seed
  const CliRun saved = vdnn(std::string(kTrain) + "--batch 32 --iterations 1 --save-weights " + weights);
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  const std::string args = std::string(kTrain) + "--batch 32 --iterations 2 ";
  const std::pair<std::string, std::string> cases[] = {
      {"--model fmnist_dag", "the model is fmnist_cnn "},
      {"--batch 16", "--batch is 32 on rank 0 but 16 on rank 1"},
      {"--bucket-size 64KiB", "--bucket-size is 25.00 MiB on rank 0 but 64.00 KiB on rank 1"},
      {"--seed 2", "--seed is 1 on rank 0 but 2 on rank 1"},
      {"--lr 0.1", "--lr is 0.05 on rank 0 but 0.1 on rank 1"},
      {"--momentum 0.5", "--momentum is 0.9 on rank 0 but 0.5 on rank 1"},
      {"--weight-decay 0", "--weight-decay is 0.0005 on rank 0 but 0 on rank 1"},
      {"--lr-schedule cosine", "--lr-schedule is constant on rank 0 but cosine on rank 1"},
      {"--augment flip", "--augment is none on rank 0 but flip on rank 1"},
      {"--iterations 3", "--iterations is 2 on rank 0 but 3 on rank 1"},
      {"--synthetic-samples 512", "the data is 1024 samples of 1x28x28, 10 classes, sha256 "},
      {"--initial-weights " + weights, "--initial-weights is none on rank 0 but "},
      {"--verify-replicas", "--verify-replicas is not given on rank 0 but given on rank 1"},
      {"--report " + (dir / "r.json").string(), "--report is none on rank 0 but "},  // rank 0 writes it
  };
  for (const auto& [extra, fragment] : cases) {
    const CliRun r = two_ranks_started_differently(args, extra);
    EXPECT_NE(r.exit_code, 0) << extra << "\n" << r.output;
    EXPECT_NE(r.exit_code, 124) << extra << ": a hang\n" << r.output;
    EXPECT_NE(r.output.find("error: the ranks were started differently: " + fragment), std::string::npos)
        << extra << "\n"
        << r.output;
    EXPECT_EQ(r.output.find("done:"), std::string::npos) << extra << ": trained\n" << r.output;
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << extra << "\n" << r.output;
  }
}

// The re-probe: data of the same count and labels but other pixels (one byte of one training image
// changed) trained two diverging replicas with exit 0; the samples in memory are now digested too.
TEST(CliDataParallel, RanksWhoseDataDifferInOnePixelAreRefused) {
  const fs::path dir = temp_dir("dp_pixels");
  const std::string a = (dir / "a").string(), b = (dir / "b").string(), src = kFashionMnistDefaultDir;
  const CliRun copied = run_command("cp -r " + src + " " + a + " && cp -r " + src + " " + b + " && gzip -dc " + b +
                                    "/train-images-idx3-ubyte.gz > " + b + "/x && printf '\\377' | dd of=" + b +
                                    "/x bs=1 seek=5000 conv=notrunc status=none && gzip -c " + b + "/x > " + b +
                                    "/train-images-idx3-ubyte.gz && rm " + b + "/x");
  ASSERT_EQ(copied.exit_code, 0) << copied.output;
  const CliRun r = two_ranks_started_differently(
      " train --data " + a + " --no-eval --iterations 2 --batch 32 --progress none", "--data " + b);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "a hang\n" << r.output;
  EXPECT_NE(r.output.find("error: the ranks were started differently: the data is 60000 samples of 1x28x28"),
            std::string::npos)
      << r.output;
  fs::remove_all(dir);
}

TEST(CliDataParallel, FlagsAreChecked) {
  // The size is checked under mpirun, where it applies; without mpirun the flag is refused (flag_rules.h).
  const CliRun zero = run_command(mpirun(1) + VDNN_BINARY + " train --data synthetic --bucket-size 0");
  EXPECT_NE(zero.exit_code, 0) << zero.output;
  EXPECT_NE(zero.output.find("error: --bucket-size 0: expected a size above 0"), std::string::npos) << zero.output;
  expect_user_error("train --bucket-size 64KiB", "--bucket-size applies only under mpirun");
  const CliRun skip = run_command(mpirun(2) + VDNN_BINARY + kTrain + "--iterations 1 --on-nan skip");
  EXPECT_NE(skip.exit_code, 0) << skip.output;
  // Every rank refuses it; whichever prints first aborts the job, so it may be either one.
  EXPECT_TRUE(skip.output.find("error: rank 0 of 2: --on-nan skip needs one rank") != std::string::npos ||
              skip.output.find("error: rank 1 of 2: --on-nan skip needs one rank") != std::string::npos)
      << skip.output;
}

// AdamW under mpirun: each bucket's update at the step's one t, the replicas identical after every
// step and the losses those of one rank over the whole batch; clipping, which needs every bucket's
// gradients before any update, is refused on every rank.
TEST(CliDataParallel, AdamwMatchesOneRankAndClippingIsRefused) {
  const fs::path dir = temp_dir("dp_adamw");
  const std::string args = std::string(kTrain) + "--model " + plain_net(dir).string() +
                           " --iterations 6 --optimizer adamw --lr 1e-3 --warmup-steps 2 ";
  const CliRun two = run_command(mpirun(2) + VDNN_BINARY + args + "--batch 32 --verify-replicas --bucket-size 64KiB " +
                                 "--report " + (dir / "two.json").string());
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("the 2 ranks held identical weights after each of the 6 steps"), std::string::npos)
      << two.output;
  const CliRun one = vdnn(args + "--batch 64 --report " + (dir / "one.json").string());
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const nlohmann::json a = read_json_file(dir / "one.json"), b = read_json_file(dir / "two.json");
  ASSERT_EQ(b["step_losses"].size(), 6u);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_NEAR(b["step_losses"][i].get<double>(), a["step_losses"][i].get<double>(),
                1e-4 * std::abs(a["step_losses"][i].get<double>()))
        << "step " << i + 1;
  const CliRun clip = run_command(mpirun(2) + VDNN_BINARY + kTrain + "--iterations 1 --clip-grad-norm 1");
  EXPECT_NE(clip.exit_code, 0) << clip.output;
  EXPECT_TRUE(clip.output.find("--clip-grad-norm needs one rank") != std::string::npos) << clip.output;
  fs::remove_all(dir);
}

// Open MPI gives every rank a pseudo-terminal, also when mpirun's own output goes to a pipe or a
// file: --progress auto drew its bar there, one endless line of carriage returns in a log. Under
// mpirun auto prints lines now; --progress bar still draws the bar (the control: ranks do see a
// terminal here, so auto's answer is the fix's, not the pipe's).
TEST(CliDataParallel, ProgressUnderMpirunIsLinesNotABar) {
  const std::string train =
      mpirun(2) + VDNN_BINARY + " train --data synthetic --synthetic-samples 512 --no-eval --batch 16 --epochs 1 ";
  const CliRun bar = run_command(train + "--progress bar");
  ASSERT_EQ(bar.exit_code, 0) << bar.output;
  ASSERT_NE(bar.output.find('\r'), std::string::npos) << "ranks see no terminal here:\n" << bar.output;
  const CliRun automatic = run_command(train);
  ASSERT_EQ(automatic.exit_code, 0) << automatic.output;
  EXPECT_EQ(automatic.output.find('\r'), std::string::npos) << "a progress bar through mpirun:\n" << automatic.output;
  EXPECT_NE(automatic.output.find("epoch   1"), std::string::npos) << automatic.output;
}

}  // namespace test_cli_data_parallel
}  // namespace vdnn::test
