# Makes sure a fixture checkpoint exists with the expected sha256; generates it otherwise.
#   cmake -DPYTHON=/usr/bin/python3 -DGENERATOR=.../make_fixture.py -DTENSORS=.../x.tensors
#         -DSEED=1 -DSHA256=<hex> -DOUT=.../x.safetensors -P ensure_fixture.cmake
# An existing OUT whose sha256 matches is reused; anything else is regenerated through a
# temporary file of this run's own (two ctest runs in one build tree may make the same fixture
# at once) and renamed into place only when its sha256 matches.
foreach(var PYTHON GENERATOR TENSORS SEED SHA256 OUT)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "ensure_fixture.cmake: -D${var}=... is required")
  endif()
endforeach()

if(EXISTS "${OUT}")
  file(SHA256 "${OUT}" have)
  if(have STREQUAL SHA256)
    message(STATUS "fixture ${OUT}: up to date (sha256 ${have})")
    return()
  endif()
  message(STATUS "fixture ${OUT}: sha256 ${have} != ${SHA256}, regenerating")
endif()

get_filename_component(dir "${OUT}" DIRECTORY)
file(MAKE_DIRECTORY "${dir}")
string(RANDOM LENGTH 12 run)
set(tmp "${OUT}.${run}.tmp")
file(REMOVE "${tmp}")
execute_process(
  COMMAND "${PYTHON}" "${GENERATOR}" "${TENSORS}" "${tmp}" --seed "${SEED}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE "${tmp}")
  message(FATAL_ERROR "fixture generation failed (${rc}): ${PYTHON} ${GENERATOR} ${TENSORS} "
                      "${tmp} --seed ${SEED} (it needs numpy: apt-get install python3-numpy)")
endif()
file(SHA256 "${tmp}" have)
if(NOT have STREQUAL SHA256)
  file(REMOVE "${tmp}")
  message(FATAL_ERROR "generated fixture has sha256 ${have}, the manifest expects ${SHA256} "
                      "(different numpy version or tensor list?)")
endif()
file(RENAME "${tmp}" "${OUT}")
message(STATUS "fixture ${OUT}: generated (sha256 ${have})")
