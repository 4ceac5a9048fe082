# Build-time provenance (docs/report.md, tool.git_commit), run by the prereg_build_id target on
# every build: the commit of the source tree, and whether the tree differs from it.
#   cmake -DSOURCE_DIR=... -DOUTPUT=.../build_commit.hpp -P cmake/build_id.cmake
# Writes OUTPUT only when its content changes, so an unchanged tree recompiles nothing.
# The value: "<commit>" for a clean tree; "<commit>+dirty.<sha256>" when tracked files differ
# from the commit or untracked, not ignored files exist, the sha256 being of the bytes of
# `git diff --binary HEAD` followed, per untracked file in `git ls-files` order, by its path, a
# NUL, its SHA-256 in hex and a newline; "unknown" outside a git checkout.
find_program(GIT git)
set(commit "unknown")
if(GIT)
  execute_process(COMMAND ${GIT} rev-parse HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                  RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND head)
    set(commit "${head}")
    # Refresh the index's stat data first, so a touched but unchanged file is not "dirty".
    execute_process(COMMAND ${GIT} update-index -q --refresh WORKING_DIRECTORY ${SOURCE_DIR}
                    OUTPUT_QUIET ERROR_QUIET)
    execute_process(COMMAND ${GIT} diff --binary HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                    OUTPUT_VARIABLE diff ERROR_QUIET)
    execute_process(COMMAND ${GIT} ls-files --others --exclude-standard
                    WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE others
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT diff STREQUAL "" OR NOT others STREQUAL "")
      set(material "${diff}")
      if(NOT others STREQUAL "")
        string(REPLACE "\n" ";" others "${others}")
        foreach(f IN LISTS others)
          file(SHA256 "${SOURCE_DIR}/${f}" fh)
          string(APPEND material "${f}\n${fh}\n")
        endforeach()
      endif()
      string(SHA256 dirty "${material}")
      set(commit "${commit}+dirty.${dirty}")
    endif()
  endif()
endif()
set(text "// Written at build time by cmake/build_id.cmake; do not edit.\n#pragma once\n\nnamespace prereg::build_info {\ninline constexpr const char *git_commit = \"${commit}\";\n} // namespace prereg::build_info\n")
set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
