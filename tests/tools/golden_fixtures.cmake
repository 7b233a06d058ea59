# Fixture generation for the golden suites: for each manifest in ../shared/golden/<suite>/ (or
# this repository's tests/golden/<suite>/), one ctest fixture test per checkpoint file it names
# (fixture.tensors, fixture.files[], fixture.models.<key>[]) and per LoRA file
# (fixture.loras.files[]), each generated once per build tree into ${CMAKE_BINARY_DIR}/fixtures/
# and reused while its sha256 matches.
#
# ggdiff_golden_fixtures(<suite> <out_var> [<dir>]) appends the ctest fixture names the suite
# needs to <out_var> (for FIXTURES_REQUIRED); <dir> is the folder of the manifest when it is
# not ../shared/golden/<suite> (the repository's own tests/golden/<suite>). Files shared by
# several manifests (same tensor list, seed and sha256) are made once.

function(_ggdiff_fixture_test tensors seed sha256 out fixtures_var)
  # A ".gguf" output comes from the repository's GGUF writer (q4_0 / f16 / f32: models the
  # reference only takes at full size), anything else from the shared safetensors one.
  if(out MATCHES "\\.gguf$")
    set(generator ${PROJECT_SOURCE_DIR}/tests/tools/make_gguf_fixture.py)
  else()
    set(generator ${PROJECT_SOURCE_DIR}/../shared/tools/make_fixture.py)
  endif()
  get_filename_component(name "${out}" NAME_WE)
  get_filename_component(dirname "${out}" DIRECTORY)
  get_filename_component(dirname "${dirname}" NAME)
  if(NOT dirname STREQUAL "fixtures")
    set(name "${dirname}_${name}")
  endif()
  set(test "fixture_${name}")
  get_property(known GLOBAL PROPERTY GGDIFF_FIXTURE_TESTS)
  if(IS_ABSOLUTE "${tensors}")
    set(tensors_path "${tensors}")
  elseif(tensors MATCHES "^tests/")
    # This repository's own tensor lists (tests/fixtures/), named from the repository root.
    set(tensors_path "${PROJECT_SOURCE_DIR}/${tensors}")
  else()
    set(tensors_path "${PROJECT_SOURCE_DIR}/../${tensors}")
  endif()
  if(NOT test IN_LIST known)
    set_property(GLOBAL APPEND PROPERTY GGDIFF_FIXTURE_TESTS ${test})
    set_property(GLOBAL PROPERTY GGDIFF_FIXTURE_SHA_${test} ${sha256})
    add_test(NAME ${test}
             COMMAND ${CMAKE_COMMAND}
                     -DPYTHON=${GGDIFF_FIXTURE_PYTHON}
                     -DGENERATOR=${generator}
                     -DTENSORS=${tensors_path}
                     -DSEED=${seed}
                     -DSHA256=${sha256}
                     -DOUT=${out}
                     -P ${CMAKE_CURRENT_SOURCE_DIR}/tools/ensure_fixture.cmake)
    # Every fixture also sets up "ggdiff_e2e": one name the e2e suites require (a list would
    # not survive gtest_discover_tests' PROPERTIES forwarding).
    set_tests_properties(${test} PROPERTIES FIXTURES_SETUP "${test};ggdiff_e2e" LABELS "fixture"
                                            TIMEOUT 900)
  else()
    get_property(have GLOBAL PROPERTY GGDIFF_FIXTURE_SHA_${test})
    if(NOT have STREQUAL sha256)
      message(FATAL_ERROR "two golden manifests name ${out} with different contents")
    endif()
  endif()
  list(APPEND ${fixtures_var} ${test})
  set(${fixtures_var} ${${fixtures_var}} PARENT_SCOPE)
endfunction()

# One checkpoint entry {tensors, seed, sha256[, format]} -> fixtures/<tensor list stem>.safetensors
# (or .gguf with "format": "gguf").
function(_ggdiff_fixture_entry json fixtures_var)
  string(JSON tensors GET "${json}" tensors)
  string(JSON seed GET "${json}" seed)
  string(JSON sha256 GET "${json}" sha256)
  string(JSON format ERROR_VARIABLE no_format GET "${json}" format)
  set(ext safetensors)
  if(NOT no_format AND format STREQUAL "gguf")
    set(ext gguf)
  endif()
  get_filename_component(stem "${tensors}" NAME_WE)
  _ggdiff_fixture_test(${tensors} ${seed} ${sha256}
                       ${CMAKE_BINARY_DIR}/fixtures/${stem}.${ext} ${fixtures_var})
  set(${fixtures_var} ${${fixtures_var}} PARENT_SCOPE)
endfunction()

function(ggdiff_golden_fixtures suite out_var)
  if(ARGC GREATER 2)
    set(manifest ${ARGV2}/manifest.json)
  else()
    set(manifest ${PROJECT_SOURCE_DIR}/../shared/golden/${suite}/manifest.json)
  endif()
  if(NOT EXISTS ${manifest})
    message(WARNING "golden suite ${suite}: ${manifest} not found")
    return()
  endif()
  file(READ ${manifest} m)
  string(JSON fixture GET "${m}" fixture)
  set(found)
  string(JSON has_tensors ERROR_VARIABLE no_tensors GET "${fixture}" tensors)
  if(NOT no_tensors)
    _ggdiff_fixture_entry("${fixture}" found)
  endif()
  string(JSON files ERROR_VARIABLE no_files GET "${fixture}" files)
  if(NOT no_files)
    string(JSON n LENGTH "${files}")
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON f GET "${files}" ${i})
      _ggdiff_fixture_entry("${f}" found)
    endforeach()
  endif()
  string(JSON models ERROR_VARIABLE no_models GET "${fixture}" models)
  if(NOT no_models)
    string(JSON nm LENGTH "${models}")
    math(EXPR lastm "${nm} - 1")
    foreach(k RANGE ${lastm})
      string(JSON key MEMBER "${models}" ${k})
      string(JSON list GET "${models}" ${key})
      string(JSON n LENGTH "${list}")
      math(EXPR last "${n} - 1")
      foreach(i RANGE ${last})
        string(JSON f GET "${list}" ${i})
        _ggdiff_fixture_entry("${f}" found)
      endforeach()
    endforeach()
  endif()
  string(JSON loras ERROR_VARIABLE no_loras GET "${fixture}" loras files)
  if(NOT no_loras)
    string(JSON n LENGTH "${loras}")
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON f GET "${loras}" ${i})
      string(JSON name GET "${f}" name)
      string(JSON tensors GET "${f}" tensors)
      string(JSON seed GET "${f}" seed)
      string(JSON sha256 GET "${f}" sha256)
      _ggdiff_fixture_test(${tensors} ${seed} ${sha256}
                           ${CMAKE_BINARY_DIR}/fixtures/${suite}_loras/${name} found)
    endforeach()
  endif()
  list(APPEND ${out_var} ${found})
  list(REMOVE_DUPLICATES ${out_var})
  set(${out_var} ${${out_var}} PARENT_SCOPE)
endfunction()

# A fixture from one of this repository's own tensor lists (tests/fixtures/NAME.tensors),
# generated into ${CMAKE_BINARY_DIR}/fixtures/NAME.safetensors like the golden ones.
function(ggdiff_extra_fixture list seed sha256 out_var)
  get_filename_component(stem "${list}" NAME_WE)
  _ggdiff_fixture_test(${CMAKE_CURRENT_SOURCE_DIR}/fixtures/${list} ${seed} ${sha256}
                       ${CMAKE_BINARY_DIR}/fixtures/${stem}.safetensors found)
  list(APPEND ${out_var} ${found})
  list(REMOVE_DUPLICATES ${out_var})
  set(${out_var} ${${out_var}} PARENT_SCOPE)
endfunction()
