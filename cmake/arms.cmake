# Arms as data (docs/arms.md): every arm is one descriptor file `kernels/<device>/<name>.arm`
# next to its kernel source. This file reads them all and generates
#   generated/prereg/arm_table.hpp  the descriptors as data, with each arm's source hash
#                                   (compiled into the core, which names no kernel), and
#   generated/arm_bindings.cpp      each arm's entry point by name (compiled into the kernels).
# An arm's source hash is SHA-256 over the text that `sha256sum FILES` prints (two spaces,
# repo-relative paths, in the order the descriptor's `sources:` lists them), so
#   (cd REPO && sha256sum FILE...) | sha256sum
# reproduces it. Changing a listed file or a descriptor re-runs CMake and the hash.

set(PREREG_ARM_KEYS name device operation summary dtypes passes max_cols cols_multiple entry abi
    allocates scratch_fwd scratch_bwd sources)
set(PREREG_ARM_REQUIRED name device operation dtypes passes max_cols cols_multiple entry abi
    allocates scratch_fwd scratch_bwd sources)

# Reads one descriptor into variables ARM_<key> (ARM_options: "name=default;..." and
# ARM_option_docs: "name=text;...") of the caller.
function(prereg_read_arm file)
  file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${file})
  foreach(k IN LISTS PREREG_ARM_KEYS)
    set(ARM_${k} "")
  endforeach()
  set(options "")
  set(docs "")
  file(STRINGS ${file} lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    string(REGEX REPLACE "#.*$" "" line "${line}")
    string(STRIP "${line}" line)
    if(line STREQUAL "")
      continue()
    endif()
    if(NOT line MATCHES "^([a-z_]+):[ \t]*(.*)$")
      message(FATAL_ERROR "${rel}:${n}: expected 'key: value', got '${line}'")
    endif()
    set(key ${CMAKE_MATCH_1})
    set(value "${CMAKE_MATCH_2}")
    string(REGEX REPLACE "[ \t]+" " " value "${value}")
    if(key STREQUAL "option")
      if(NOT value MATCHES "^([a-z_][a-z0-9_]*) (-?[0-9.eE+-]+)$")
        message(FATAL_ERROR "${rel}:${n}: option wants 'NAME DEFAULT', got '${value}'")
      endif()
      list(APPEND options "${CMAKE_MATCH_1}=${CMAKE_MATCH_2}")
    elseif(key STREQUAL "option_doc")
      if(NOT value MATCHES "^([a-z_][a-z0-9_]*) (.+)$")
        message(FATAL_ERROR "${rel}:${n}: option_doc wants 'NAME TEXT', got '${value}'")
      endif()
      string(REPLACE "\"" "'" text "${CMAKE_MATCH_2}")
      list(APPEND docs "${CMAKE_MATCH_1}=${text}")
    else()
      list(FIND PREREG_ARM_KEYS ${key} known)
      if(known EQUAL -1)
        message(FATAL_ERROR "${rel}:${n}: unknown key '${key}'")
      endif()
      if(NOT ARM_${key} STREQUAL "")
        message(FATAL_ERROR "${rel}:${n}: duplicate key '${key}'")
      endif()
      string(REPLACE "\"" "'" value "${value}")
      set(ARM_${key} "${value}")
    endif()
  endforeach()
  foreach(k IN LISTS PREREG_ARM_REQUIRED)
    if(ARM_${k} STREQUAL "")
      message(FATAL_ERROR "${rel}: missing key '${k}'")
    endif()
  endforeach()
  foreach(k IN LISTS PREREG_ARM_KEYS)
    set(ARM_${k} "${ARM_${k}}" PARENT_SCOPE)
  endforeach()
  string(REPLACE ";" "," options "${options}")
  string(REPLACE ";" "\\n" docs "${docs}")
  set(ARM_options "${options}" PARENT_SCOPE)
  set(ARM_option_docs "${docs}" PARENT_SCOPE)
  set(ARM_descriptor "${rel}" PARENT_SCOPE)
endfunction()

# Generates both files from every kernels/*/*.arm; `with_cuda`: bind the CUDA arms' code too.
function(prereg_generate_arms table_out bindings_out with_cuda)
  file(GLOB arm_files CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/kernels/*/*.arm)
  list(SORT arm_files)
  set(table "")
  set(externs "")
  set(bindings "")
  set(seen "")
  foreach(f IN LISTS arm_files)
    set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${f})
    prereg_read_arm(${f})
    if(NOT ARM_device MATCHES "^(cpu|cuda)$")
      message(FATAL_ERROR "${ARM_descriptor}: device must be cpu or cuda, got '${ARM_device}'")
    endif()
    if(NOT ARM_abi MATCHES "^(norm|tensors)$")
      message(FATAL_ERROR "${ARM_descriptor}: abi must be norm or tensors, got '${ARM_abi}'")
    endif()
    list(FIND seen "${ARM_device}/${ARM_name}" dup)
    if(NOT dup EQUAL -1)
      message(FATAL_ERROR "${ARM_descriptor}: a second arm ${ARM_device}/${ARM_name}")
    endif()
    list(APPEND seen "${ARM_device}/${ARM_name}")
    # The source hash.
    set(listing "")
    string(REPLACE " " ";" srcs "${ARM_sources}")
    foreach(s IN LISTS srcs)
      if(NOT EXISTS ${CMAKE_SOURCE_DIR}/${s})
        message(FATAL_ERROR "${ARM_descriptor}: source ${s} does not exist")
      endif()
      file(SHA256 ${CMAKE_SOURCE_DIR}/${s} h)
      string(APPEND listing "${h}  ${s}\n")
      set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${s})
    endforeach()
    string(SHA256 combined "${listing}")
    string(APPEND table "    {\"${ARM_device}\", \"${ARM_name}\", \"${ARM_operation}\", \"${ARM_summary}\", \"${ARM_dtypes}\", \"${ARM_passes}\", \"${ARM_max_cols}\", \"${ARM_cols_multiple}\", \"${ARM_abi}\", \"${ARM_allocates}\", \"${ARM_scratch_fwd}\", \"${ARM_scratch_bwd}\", \"${ARM_options}\", \"${ARM_option_docs}\", \"${combined}\", \"${ARM_sources}\", \"${ARM_descriptor}\"},\n")
    # The binding (CUDA arms only in a CUDA build).
    if(ARM_device STREQUAL "cuda" AND NOT with_cuda)
      continue()
    endif()
    if(NOT ARM_entry MATCHES "^(.+)::([A-Za-z_][A-Za-z0-9_]*)$")
      message(FATAL_ERROR "${ARM_descriptor}: entry must be a qualified name, got '${ARM_entry}'")
    endif()
    set(type "prereg::arm_ops")
    set(field "&${ARM_entry}, nullptr")
    if(ARM_abi STREQUAL "tensors")
      set(type "prereg::arm_entry")
      set(field "nullptr, &${ARM_entry}")
    endif()
    string(APPEND externs "namespace ${CMAKE_MATCH_1} { extern const ${type} ${CMAKE_MATCH_2}; }\n")
    string(APPEND bindings "    {\"${ARM_device}\", \"${ARM_name}\", {${field}}},\n")
  endforeach()

  file(CONFIGURE OUTPUT ${table_out} CONTENT "// Generated by cmake/arms.cmake from kernels/*/*.arm: every arm's descriptor as data.
#pragma once

namespace prereg::generated {
/// One descriptor, as its file states it (parsed by runner/spec/registry.cpp).
struct arm_record {
  const char *device, *name, *operation, *summary, *dtypes, *passes, *max_cols, *cols_multiple,
      *abi, *allocates, *scratch_fwd, *scratch_bwd, *options, *option_docs, *sha256, *sources,
      *descriptor;
};
/// Ends with an all-null sentinel.
inline constexpr arm_record arm_records[] = {
${table}    {}};
} // namespace prereg::generated
")
  file(CONFIGURE OUTPUT ${bindings_out} CONTENT "// Generated by cmake/arms.cmake from kernels/*/*.arm: each arm's entry point.
#include \"spec/arm_code.hpp\"

#include <string_view>

${externs}
namespace prereg {
namespace {
struct binding {
  const char *device;
  const char *name;
  arm_code code;
};
const binding bindings[] = {
${bindings}    {nullptr, nullptr, {}}};
} // namespace

arm_code builtin_arm_code(const arm_info &arm) {
  for (const binding *b = bindings; b->name != nullptr; ++b)
    if (arm.device == b->device && arm.name == b->name)
      return b->code;
  return {};
}
} // namespace prereg
")
endfunction()
