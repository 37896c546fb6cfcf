// `volley bench sample|gather --device cuda`: a JSON line with the copy bandwidths of the same
// run where a GPU is present; a clear one-line error (exit 1, no crash) where it is not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "volley/core/cuda_device.h"

namespace {

using ::testing::HasSubstr;
using volley::testing_cli::CliFixture;
using volley::testing_cli::kCora;
using volley::testing_cli::last_json_line;
using volley::testing_cli::Result;

class BenchCudaCliTest : public CliFixture {};

TEST_F(BenchCudaCliTest, SampleOnCuda) {
  for (const char* mode : {"GPU", "UVA"}) {
    const Result result =
        run("bench sample --dataset " + kCora +
            " --fanout 5,5 --batch-size 32 --batches 4 --device cuda --mode " + mode);
    if (volley::cuda_device_count() == 0) {
      EXPECT_EQ(result.exit_code, 1) << result.err;
      EXPECT_THAT(result.err, HasSubstr("volley: error: --device cuda: "));
      EXPECT_THAT(result.err, volley::cuda_built() ? HasSubstr("0 CUDA device(s) are visible")
                                                   : HasSubstr("has no CUDA support"));
    } else {
      ASSERT_EQ(result.exit_code, 0) << result.err;
      const auto line = last_json_line(result.out);
      EXPECT_EQ(line["mode"], mode);
      EXPECT_GT(line["seps"].get<double>(), 0.0);
      EXPECT_GT(line["d2d_copy_gbps"].get<double>(), 0.0);
      EXPECT_GT(line["pinned_h2d_gbps"].get<double>(), 0.0);
    }
  }
}

TEST_F(BenchCudaCliTest, GatherOnCuda) {
  const Result result =
      run("bench gather --rows 5000 --dim 16 --batch 1000 --batches 2 --device cuda "
          "--cache-fraction 0.5");
  if (volley::cuda_device_count() == 0) {
    EXPECT_EQ(result.exit_code, 1) << result.err;
    EXPECT_THAT(result.err, HasSubstr("volley: error: --device cuda: "));
  } else {
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const auto line = last_json_line(result.out);
    EXPECT_GT(line["gather_gbps"].get<double>(), 0.0);
    EXPECT_GT(line["tier_mix_bound_gbps"].get<double>(), 0.0);
  }
}

TEST_F(BenchCudaCliTest, BadDeviceAndModeAreRejected) {
  Result result = run("bench sample --dataset " + kCora + " --batches 1 --device tpu");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("--device must be cpu or cuda, got 'tpu'"));
  result = run("bench sample --dataset " + kCora + " --batches 1 --device cuda --mode zero");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("'zero' is not a CUDA sampling mode"));
  result = run("bench sample --dataset " + kCora + " --batches 1 --mode UVA");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("--mode UVA applies to --device cuda only"));
  result = run("bench gather --rows 100 --dim 4 --batch 10 --batches 1 --device gpu");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("--device must be cpu or cuda, got 'gpu'"));
}

}  // namespace
