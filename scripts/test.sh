#!/usr/bin/env bash
# scripts/test.sh — the whole test suite: installs what is missing, builds, checks the installed
# package (scripts/install_check.sh) and the docs (scripts/cli_reference.sh --check,
# scripts/check_docs.sh), then runs
#   1. the runtime, stream, allocator and loader tests under ThreadSanitizer (build-tsan/),
#   2. the tests under AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer (build-asan/),
#   3. every test (ctest) in the Release build.
# Any sanitizer report fails the run. VDNN_SKIP_TSAN=1 / VDNN_SKIP_ASAN=1 skip step 1 / 2 (a
# quicker local run). Extra arguments go to the Release ctest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# Where the time goes (CI allows 90 minutes; docs/ci.md has the figures): each phase's end, in
# seconds since the start.
elapsed() { echo "== ${SECONDS} s: $*"; }
# ctest -j runs two test processes on two cores; OpenMP threads that spin while they wait (the
# default) then starve the other process: finite-difference kernel tests took 40-70 s each beside
# another instead of 0.4-0.6 s alone. Passive waiting: the same set of kernel tests in 2.7 s, not 7.6.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
# The data-parallel tests start ranks with mpirun (Open MPI), which refuses to run as root (CI and
# containers) unless both of these are set.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ensure_packages "${VDNN_PACKAGES[@]}" "${VDNN_TEST_PACKAGES[@]}"
build_vdnn
elapsed "the Release build"
# The Python test environment (scripts/python_env.sh: Debian's torch + PyPI onnxruntime and
# safetensors, pinned) beside each build whose tests run Python.
bash "$VDNN_ROOT/scripts/python_env.sh" "$BUILD_DIR"
# libvdnn as an installed package: install, find models/profiles without the source tree, build
# and run examples/ against it (scripts/install_check.sh; about 15 s).
bash "$VDNN_ROOT/scripts/install_check.sh" "$BUILD_DIR"
elapsed "the install check"
# The docs keep up with the code: docs/cli.md is what `vdnn --help` prints now, the README's and the
# guides' marked examples run, and their links lead somewhere (about 15 s).
bash "$VDNN_ROOT/scripts/cli_reference.sh" --check "$BUILD_DIR/vdnn"
bash "$VDNN_ROOT/scripts/check_docs.sh" "$BUILD_DIR"
elapsed "the docs checks"

if [ "${VDNN_SKIP_TSAN:-0}" != 1 ]; then
  # libgomp is not instrumented, so ThreadSanitizer cannot see OpenMP's barriers and reports
  # false races inside every parallel loop. OMP_NUM_THREADS=1 keeps oneDNN's and vdnn's OpenMP
  # loops single-threaded inside each stream worker, while vdnn's own threads (three stream
  # workers, the batch loader) still run concurrently — those are what this run checks.
  TSAN_DIR="$VDNN_ROOT/build-tsan"
  # The CUDA backend is left out here: its tests skip without a GPU and nvcc would only add time.
  cmake -S "$VDNN_ROOT" -B "$TSAN_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVDNN_SANITIZE=thread -DVDNN_UNITY_BUILD=ON \
    -DVDNN_CUDA=OFF >/dev/null
  cmake --build "$TSAN_DIR" -j "$JOBS" --target vdnn_tests
  # vdnn_tests is built here from those tests' files only (CMakeLists.txt), and without the CLI.
  echo "== ThreadSanitizer: runtime, streams, allocators, loader workers (augmenting, decoding), step recorder, stress (48 cases)"
  OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 exitcode=66" VDNN_STRESS_CASES=48 "$TSAN_DIR/vdnn_tests" \
    --gtest_brief=1 \
    --gtest_filter='CpuDevice*:OffsetAllocator*:HostCopies*:Residency*:Batch*:Augment.TheLoader*:TokenData.Windows*:TokenDataLoader*:Offload.Bit*:Offload.Too*:StepTimeline*:Stress.*'
  elapsed "ThreadSanitizer (build and run)"
fi

if [ "${VDNN_SKIP_ASAN:-0}" != 1 ]; then
  ASAN_DIR="$VDNN_ROOT/build-asan"
  cmake -S "$VDNN_ROOT" -B "$ASAN_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVDNN_SANITIZE=address -DVDNN_UNITY_BUILD=ON \
    -DVDNN_CUDA=OFF >/dev/null
  # vdnn too: the CLI tests run build-asan/vdnn, so the CLI is checked as well.
  cmake --build "$ASAN_DIR" -j "$JOBS" --target vdnn_tests vdnn
  bash "$VDNN_ROOT/scripts/python_env.sh" "$ASAN_DIR"
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer: every test but sixteen"
  # abort_on_error: a report in a CLI child process becomes SIGABRT, which the CLI tests see as a
  # crash (they check the exit code); halt_on_error: UBSan stops at its first report too.
  # Left out, each about 4 minutes under ASan: ModelZooRuns.EveryNetworkTrains… (the same layer
  # kinds and joins run in the stress test and the runtime tests; the zoo planning test stays) and
  # ConvKernel.BlockedBackward… (finite differences; ConvKernelTest still checks blocked
  # backward against the reference). Also left out, 20-60 s each under ASan and planning code
  # only: the budget sweeps of ResNet-18, auto against vDNN over three zoo networks and the VGG-16
  # sweep through the CLI (the sweeps of fmnist_dag and VGG-16, auto's bit-identity test and the
  # placement tests run the same code here). And two finite-difference kernel checks, 64 s and
  # 35 s under ASan (the Release run checks their math; under ASan ConvKernel.Backward… runs the
  # convolution's backward wrapper and every network test runs ReLU's). The stress test runs 60
  # cases instead of 300. And Fashion-MNIST trained from a folder of 70,000 PNG and JPEG files (136 s alone
  # in Release; the decoders, the folder and the loader's workers run here in the smaller tests).
  # And the slice-run search below VGG's floor (25 s in Release, 18 auto searches on sliced graphs:
  # planning code only; the sliced graphs train here in SliceRuns.*), and ResNet-18 at batch 256
  # trained below its floor (2 s in Release; the same kernels train in SliceRuns.*BatchNorm*).
  # And the four tests whose point is how the time grows (ONNX import, `vdnn plan` and a safetensors
  # header linear in their size; no plan below StepBound's bound at every budget): 181, 83, 13 and
  # 90 s under ASan (13, 15, 1 and 8 s in Release, which runs them), timing ASan's bookkeeping; the
  # same importer, planner and reader code runs here on the smaller inputs of their other tests.
  (cd "$ASAN_DIR" &&
    ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1" \
    UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1" \
    VDNN_STRESS_CASES=60 ctest -j "$JOBS" --output-on-failure \
      -E '^(ModelZooRuns\.EveryNetworkTrainsWithIdenticalWeightsUnderNoneAndAll|ConvKernel\.BlockedBackwardMatchesFiniteDifferences|Models/BudgetSweepTest\..*/resnet18 .*|AutoPolicy\.FitsWhereAllFitsAndIsNeverSlowerThanVdnn|CliPlanSweep\.Vgg16OnTheTitanXFitsMonotonicallyAndNeverBeatsTheOracle|ConvKernel\.TinyOutputBackwardMatchesFiniteDifferences|ReluKernel\.MatchesReferenceAndFiniteDifferences|CliImageFolder\.FashionMnistAsAFolderOfPngAndJpegFilesTrainsToTheIdxAccuracy|SliceSearch\.BelowTheSmallestWholeBatchBudgetSlicesMakeAVggFit|SliceRuns\.AResNetTrainsBelowItsLargestLayerWithItsStemsBatchNormInARun|OnnxHostile\.ImportIsLinearInTheNodes|CliPlanScale\.PlanIsLinearInTheLayers|HostileReaders\.SafetensorsHeaderWithOneHundredThousandEntriesIsLinear|StepBound\.NoPlanAtTheBudgetIsFasterWholeOrSliced)$')
  elapsed "AddressSanitizer (build and run)"
fi

# --- fuzz smoke run (issue 9): each libFuzzer target of fuzz/ for 15 s (scripts/fuzz.sh); any
# crash, sanitizer report, exception other than vdnn::Error, hang or huge allocation fails CI.
# VDNN_SKIP_FUZZ=1 skips it. The long run is documented in docs/reliability.md ("Fuzzing").
if [ "${VDNN_SKIP_FUZZ:-0}" != 1 ]; then
  bash "$VDNN_ROOT/scripts/fuzz.sh"
  elapsed "the fuzz smoke run"
fi
# --- end of fuzz smoke run

cd "$BUILD_DIR"
OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" ctest --output-on-failure -j "$JOBS" "$@"
elapsed "every test in the Release build"
