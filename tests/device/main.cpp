// The GPU test runner: exits 77 (ctest: skipped) before doctest runs when no CUDA device is usable.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <cstdio>

int main(int argc, char **argv) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0) {
    std::fprintf(stderr, "device tests skipped: no usable CUDA device (%s)\n",
                 rc != cudaSuccess ? cudaGetErrorString(rc) : "cudaGetDeviceCount found 0");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
