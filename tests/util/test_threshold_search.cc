// The threshold search (util/threshold_search.h): for any monotone predicate on 1..cap it finds the
// threshold whatever the hint and the first stride, asks each value once and only values in 1..cap,
// and a hint at the threshold with stride 1 costs two questions (what the look-ahead depth search
// relies on to be cheap when the depth found last is still right).
#include <gtest/gtest.h>

#include <set>

#include "util/threshold_search.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_threshold_search {

TEST(ThresholdSearch, FindsTheThresholdFromAnyHintAskingEachValueOnce) {
  for (int64_t cap : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{1024}, int64_t{1} << 20})
    for (int64_t threshold : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{3}, int64_t{100}, cap - 1, cap})
      for (int64_t hint : {int64_t{-5}, int64_t{0}, int64_t{1}, threshold - 1, threshold, threshold + 1, cap, cap + 9})
        for (bool doubling : {false, true}) {
          if (threshold < 0 || threshold > cap) continue;
          const int64_t stride = doubling ? std::max<int64_t>(hint, 1) : 1;
          std::multiset<int64_t> asked;
          const int64_t found = last_true(
              hint, cap,
              [&](int64_t n) {
                EXPECT_GE(n, 1);
                EXPECT_LE(n, cap);
                asked.insert(n);
                return n <= threshold;
              },
              stride);
          EXPECT_EQ(found, threshold) << "cap " << cap << ", hint " << hint << ", stride " << stride;
          for (int64_t n : asked) EXPECT_EQ(asked.count(n), 1u) << n << " asked twice";
          EXPECT_LE(asked.size(), 2u * 21u + 2u) << "cap " << cap << ", hint " << hint << ", stride " << stride;
        }
}

TEST(ThresholdSearch, AHintAtTheThresholdAsksTwoQuestions) {
  for (int64_t threshold : {int64_t{1}, int64_t{57}, int64_t{34122}}) {
    int asked = 0;
    const int64_t found = last_true(threshold, 40000, [&](int64_t n) {
      ++asked;
      return n <= threshold;
    });
    EXPECT_EQ(found, threshold);
    EXPECT_EQ(asked, 2) << "the hint, then the value after it";
  }
}

TEST(ThresholdSearch, DoublingFromALowerBoundAsksFewerThanGallopingByOne) {
  auto questions = [](int64_t stride) {
    int asked = 0;
    EXPECT_EQ(last_true(90, 1 << 20, [&](int64_t n) { return ++asked, n <= 130; }, stride), 130);
    return asked;
  };
  EXPECT_LT(questions(90), questions(1));
}

TEST(ThresholdSearch, RefusesAnEmptyRangeOrAStrideBelowOne) {
  const auto holds = [](int64_t) { return true; };
  EXPECT_THROW(last_true(0, 0, holds), InternalError);
  EXPECT_THROW(last_true(0, 5, holds, 0), InternalError);
}

}  // namespace test_threshold_search
}  // namespace vdnn
