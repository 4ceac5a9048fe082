// The softmax operation's tensors, in the order of its descriptor (runner/spec/operations.cpp):
// kernels on the generic seam (tensor_args) index their buffers with these.
//   fwd:      y = softmax(x) over the last axis (cols), row by row
//   fwd+bwd:  then dx = y * (dy - sum_j(dy_j * y_j)) per row
// x, dy: inputs [rows, cols]; y: output of the forward, read by the backward; dx: output.
#pragma once

#include <cstddef>

namespace prereg::softmax {

enum tensor : std::size_t { x = 0, y = 1, dy = 2, dx = 3 };

} // namespace prereg::softmax
