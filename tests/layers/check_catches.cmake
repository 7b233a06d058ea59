# Shows that the layer include check (cmake/check_layers.cmake) fails on the regressions it
# exists for. Writes a small source tree under WORK with the real layer table's folders:
#   src/core/uses_ggml.h       includes <ggml.h>            (core does not link ggml)
#   src/runtime/uses_nn.h      includes "nn/weights.h"      (runtime does not link nn)
#   src/sampling/uses_image.h  includes "image/image.h"     (sampling does not link image)
#   apps/cli/uses_src.cpp      includes "core/status.h"     (apps see include/ only)
#   src/nn/uses_runtime.h      includes "runtime/weights.h" (allowed: nn links runtime)
# and passes only if the check fails naming each of the four, and not the allowed one.
#   cmake -DTABLE=<build>/layer_table.cmake -DCHECK=<src>/cmake/check_layers.cmake
#         -DWORK=<scratch dir> -P check_catches.cmake

cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK})
file(WRITE ${WORK}/src/core/uses_ggml.h "#pragma once\n#include <ggml.h>\n")
file(WRITE ${WORK}/src/runtime/uses_nn.h "#pragma once\n#include \"nn/weights.h\"\n")
file(WRITE ${WORK}/src/sampling/uses_image.h "#pragma once\n#include \"image/image.h\"\n")
file(WRITE ${WORK}/apps/cli/uses_src.cpp "#include \"core/status.h\"\n")
file(WRITE ${WORK}/src/nn/uses_runtime.h "#pragma once\n#include \"runtime/weights.h\"\n")

execute_process(COMMAND ${CMAKE_COMMAND} -DTABLE=${TABLE} -DROOT=${WORK} -P ${CHECK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(out "${out}${err}")
message("${out}")
if(rc EQUAL 0)
  message(FATAL_ERROR "the layer check passed a tree that breaks the layers")
endif()
foreach(expected
        "src/core/uses_ggml.h includes <ggml.h>: layer core (src/core) does not link ggml"
        "src/runtime/uses_nn.h includes \"nn/weights.h\" (layer nn): layer runtime (src/runtime) may include only"
        "src/sampling/uses_image.h includes \"image/image.h\" (layer image): layer sampling"
        "apps/cli/uses_src.cpp includes \"core/status.h\" (layer core): app cli sees include/ only")
  string(FIND "${out}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the layer check did not report: ${expected}")
  endif()
endforeach()
string(FIND "${out}" "uses_runtime.h" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "the layer check refused nn including runtime, which nn links")
endif()
string(FIND "${out}" "4 include(s) against the layers" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the layer check did not count exactly four offences")
endif()
message(STATUS "the layer check catches all four regressions")
