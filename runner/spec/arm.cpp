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
  case dtype::fp8_e4m3:
    return "fp8_e4m3";
  case dtype::fp8_e5m2:
    return "fp8_e5m2";
  case dtype::int8:
    return "int8";
  case dtype::uint8:
    return "uint8";
  case dtype::int32:
    return "int32";
  case dtype::int64:
    return "int64";
  case dtype::boolean:
    return "bool";
  }
  return "?";
}

std::string_view to_string(pass_kind p) { return p == pass_kind::fwd ? "fwd" : "fwd+bwd"; }

std::string_view to_string(operation o) {
  return o == operation::layernorm ? "layernorm" : "rmsnorm";
}

std::size_t element_bytes(dtype d) {
  switch (d) {
  case dtype::fp32:
  case dtype::int32:
    return 4;
  case dtype::fp16:
  case dtype::bf16:
    return 2;
  case dtype::int64:
    return 8;
  case dtype::fp8_e4m3:
  case dtype::fp8_e5m2:
  case dtype::int8:
  case dtype::uint8:
  case dtype::boolean:
    return 1;
  }
  return 4;
}

bool is_integral(dtype d) {
  return d == dtype::int8 || d == dtype::uint8 || d == dtype::int32 || d == dtype::int64 ||
         d == dtype::boolean;
}

bool is_fp8(dtype d) { return d == dtype::fp8_e4m3 || d == dtype::fp8_e5m2; }

double norm_eps(operation o) { return o == operation::layernorm ? 1e-5 : 1e-6; }

} // namespace prereg
