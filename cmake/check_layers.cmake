# The layer include check (docs/layers.md), run as a script:
#   cmake -DTABLE=<build>/layer_table.cmake -DROOT=<source dir> -P check_layers.cmake
#
# TABLE (written at configure time by CMakeLists.txt) lists each layer target with the src/
# folders it compiles (GGDIFF_LAYER_DIRS_<target>) and its DEPS (GGDIFF_LAYER_DEPS_<target>).
# For every .h/.cpp directly in those folders, each #include is checked:
#   - "<folder>/x.h" where <folder> belongs to a layer: that layer must be the file's own or
#     one it links, directly or through its DEPS;
#   - <ggml*.h> / <gguf.h>: the layer must link ggml::ggml, directly or through its DEPS;
#   - a path with "..": refused (it would walk around the rule).
# Files under ROOT/apps may include neither src/ headers nor ggml: the apps see include/.
# Every offence is listed, then the script fails; it prints one line when all is well.

cmake_minimum_required(VERSION 3.25)

if(NOT TABLE OR NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DTABLE=layer_table.cmake -DROOT=<source dir> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
include(${TABLE})

# Which layer owns each src/ folder.
foreach(layer IN LISTS GGDIFF_LAYERS)
  foreach(dir IN LISTS GGDIFF_LAYER_DIRS_${layer})
    set(owner_${dir} ${layer})
  endforeach()
endforeach()

# The layers each layer may include (itself and its DEPS, transitively), and whether
# ggml is among its DEPS.
function(layer_closure layer out_layers out_ggml)
  set(seen ${layer})
  set(todo ${layer})
  set(ggml OFF)
  while(todo)
    list(POP_FRONT todo cur)
    foreach(dep IN LISTS GGDIFF_LAYER_DEPS_${cur})
      if(dep STREQUAL "ggml::ggml")
        set(ggml ON)
      elseif(dep IN_LIST GGDIFF_LAYERS AND NOT dep IN_LIST seen)
        list(APPEND seen ${dep})
        list(APPEND todo ${dep})
      endif()
    endforeach()
  endwhile()
  set(${out_layers} ${seen} PARENT_SCOPE)
  set(${out_ggml} ${ggml} PARENT_SCOPE)
endfunction()

# A layer target's short name for messages: ggdiff_runtime -> runtime.
function(layer_name target out)
  string(REGEX REPLACE "^ggdiff_" "" n "${target}")
  set(${out} ${n} PARENT_SCOPE)
endfunction()

set(include_regex "^[ \t]*#[ \t]*include[ \t]*([<\"])([^>\"]+)[>\"]")
set(ggml_regex "^(ggml[-a-z0-9]*|gguf)\\.h$")

# Checks every #include of `file`; may_ggml / allowed describe what it may include
# (allowed empty: no src/ header at all). Offences go to the parent's `offences`.
function(check_file file who allowed may_ggml)
  file(STRINGS ${file} lines REGEX "${include_regex}")
  file(RELATIVE_PATH rel ${ROOT} ${file})
  set(found)
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "${include_regex}")
      continue()
    endif()
    set(open "${CMAKE_MATCH_1}")
    set(path "${CMAKE_MATCH_2}")
    if(open STREQUAL "<")
      set(shown "<${path}>")
    else()
      set(shown "\"${path}\"")
    endif()
    if(path MATCHES "\\.\\.")
      list(APPEND found "${rel} includes ${shown}: no '..' in includes (it walks around the layers)")
      continue()
    endif()
    if(path MATCHES "${ggml_regex}")
      if(NOT may_ggml)
        list(APPEND found "${rel} includes ${shown}: ${who} does not link ggml")
      endif()
      continue()
    endif()
    get_filename_component(dir "${path}" DIRECTORY)
    if(dir STREQUAL "" OR NOT DEFINED owner_${dir})
      continue()  # its own folder, or not a src/ folder (nlohmann/json.hpp, CLI/CLI.hpp)
    endif()
    set(target ${owner_${dir}})
    if(NOT target IN_LIST allowed)
      layer_name(${target} target_name)
      if(allowed)
        set(names)
        foreach(a IN LISTS allowed)
          layer_name(${a} n)
          list(APPEND names ${n})
        endforeach()
        list(JOIN names ", " names)
        list(APPEND found "${rel} includes ${shown} (layer ${target_name}): ${who} may include only ${names}")
      else()
        list(APPEND found "${rel} includes ${shown} (layer ${target_name}): ${who} sees include/ only")
      endif()
    endif()
  endforeach()
  set(offences ${offences} ${found} PARENT_SCOPE)
endfunction()

set(offences)
set(nfiles 0)
foreach(layer IN LISTS GGDIFF_LAYERS)
  layer_closure(${layer} allowed may_ggml)
  layer_name(${layer} name)
  foreach(dir IN LISTS GGDIFF_LAYER_DIRS_${layer})
    file(GLOB files ${ROOT}/src/${dir}/*.h ${ROOT}/src/${dir}/*.cpp)
    foreach(f IN LISTS files)
      check_file(${f} "layer ${name} (src/${dir})" "${allowed}" ${may_ggml})
      math(EXPR nfiles "${nfiles} + 1")
    endforeach()
  endforeach()
endforeach()

file(GLOB_RECURSE app_files ${ROOT}/apps/*.h ${ROOT}/apps/*.cpp)
foreach(f IN LISTS app_files)
  file(RELATIVE_PATH rel ${ROOT}/apps ${f})
  string(REGEX REPLACE "/.*" "" app "${rel}")
  check_file(${f} "app ${app}" "" OFF)
  math(EXPR nfiles "${nfiles} + 1")
endforeach()

if(offences)
  list(LENGTH offences n)
  list(JOIN offences "\n  " text)
  message(FATAL_ERROR "layer check: ${n} include(s) against the layers (docs/layers.md):\n  ${text}\n"
                      "Link the layer in CMakeLists.txt if ARCHITECTURE's order allows it; "
                      "otherwise move the code to the layer that may use it.")
endif()
message(STATUS "layer check: ${nfiles} files include only the layers they link")
