// Names and sizes of the arm interface's enums.
#include "prereg/arm.hpp"

namespace prereg {

std::string_view to_string(dtype d) {
  switch (d) {
  case dtype::fp32:
    return "fp32";
  case dtype::fp16:
    return "fp16";
  case dtype::bf16:
    return "bf16";
  }
  return "?";
}

std::string_view to_string(pass_kind p) { return p == pass_kind::fwd ? "fwd" : "fwd+bwd"; }

std::string_view to_string(operation o) {
  return o == operation::layernorm ? "layernorm" : "rmsnorm";
}

std::size_t element_bytes(dtype d) { return d == dtype::fp32 ? 4 : 2; }

double norm_eps(operation o) { return o == operation::layernorm ? 1e-5 : 1e-6; }

} // namespace prereg
