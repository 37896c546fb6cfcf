#include "volley/core/philox.h"

#include <gtest/gtest.h>

#include <vector>

namespace volley {
namespace {

struct KnownAnswer {
  PhiloxCounter counter;
  PhiloxKey key;
  PhiloxCounter expected;
};

// Random123's kat_vectors, "philox4x32 10" lines: counter[4] key[2] -> output[4].
const KnownAnswer kKnownAnswers10[] = {
    {{{0x00000000, 0x00000000, 0x00000000, 0x00000000}},
     {{0x00000000, 0x00000000}},
     {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
    {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
     {{0xffffffff, 0xffffffff}},
     {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
    {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
     {{0xa4093822, 0x299f31d0}},
     {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
};

TEST(Philox, MatchesRandom123KnownAnswers) {
  for (const auto& answer : kKnownAnswers10) {
    const PhiloxCounter out = philox4x32<10>(answer.counter, answer.key);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out.word[i], answer.expected.word[i]) << "word " << i;
  }
}

TEST(Philox, MatchesRandom123SevenRoundAnswer) {
  const PhiloxCounter out =
      philox4x32<7>({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, {{0xa4093822, 0x299f31d0}});
  const uint32_t expected[4] = {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out.word[i], expected[i]);
}

TEST(Philox, StreamIsAFunctionOfSeedAndCounter) {
  PhiloxStream a(42, {{0, 7, 0, 3}});
  PhiloxStream b(42, {{0, 7, 0, 3}});
  PhiloxStream c(43, {{0, 7, 0, 3}});
  int differences = 0;
  for (int i = 0; i < 100; ++i) {
    const uint32_t x = a.next();
    EXPECT_EQ(x, b.next());
    differences += x != c.next();
  }
  EXPECT_GT(differences, 95);
}

TEST(Philox, StreamOutputIsTheBlockSequence) {
  PhiloxStream stream(0, {{0, 0, 0, 0}});
  // First four outputs are the all-zero known answer.
  EXPECT_EQ(stream.next(), 0x6627e8d5u);
  EXPECT_EQ(stream.next(), 0xe169c58du);
  EXPECT_EQ(stream.next(), 0xbc57ac4cu);
  EXPECT_EQ(stream.next(), 0x9b00dbd8u);
  const PhiloxCounter second = philox4x32<10>({{1, 0, 0, 0}}, {{0, 0}});
  EXPECT_EQ(stream.next(), second.word[0]);
}

TEST(Philox, BoundedIsInRangeAndRoughlyUniform) {
  PhiloxStream stream(123, {{0, 0, 0, 0}});
  std::vector<int> counts(7, 0);
  constexpr int kDraws = 70000;
  for (int i = 0; i < kDraws; ++i) {
    const uint32_t value = stream.bounded(7);
    ASSERT_LT(value, 7u);
    ++counts[value];
  }
  // Chi-square with 6 degrees of freedom; 22.46 is the 0.999 quantile.
  double chi2 = 0;
  for (int count : counts) chi2 += (count - 10000.0) * (count - 10000.0) / 10000.0;
  EXPECT_LT(chi2, 22.46);
  EXPECT_EQ(stream.bounded(1), 0u);
}

TEST(Philox, UniformIsInUnitInterval) {
  PhiloxStream stream(5, {{0, 1, 2, 3}});
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    const float u = stream.uniform();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    const double d = stream.uniform_double();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
  for (int i = 0; i < 1000; ++i) ASSERT_LT(stream.bounded64(10'000'000'000ULL), 10'000'000'000ULL);
}

}  // namespace
}  // namespace volley
