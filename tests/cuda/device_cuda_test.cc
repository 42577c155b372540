// GPU tests. Built when MURMUR_WITH_CUDA is ON; every test skips, visibly, when the machine has no
// CUDA device, so CI on a CPU machine compiles and runs this binary without failing.
#include <gtest/gtest.h>

#include "kernels/device.h"
#include "kernels/ops.h"

namespace murmur::kernels {
namespace {

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
};

TEST_F(CudaTest, DeviceIsVisible) { EXPECT_GT(CudaDeviceCount(), 0); }

TEST_F(CudaTest, MissingKernelsSayUnimplementedInsteadOfRunningOnTheHost) {
  float x = 1.0f;
  Status s = ReluForward<float>(Device::Cuda(0), ConstMatrixView<float>(&x, 1, 1),
                                MatrixView<float>(&x, 1, 1));
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s;
}

}  // namespace
}  // namespace murmur::kernels
