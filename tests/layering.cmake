# The layering, checked on the includes: a source file of a part includes headers of its own part
# and of the parts below it, never above (CMakeLists.txt links the parts in the same order, so a
# call upward fails to link; this catches a header-only use too). Generated protobuf headers
# (*.pb.h: one library below every part) are exempt.
#   cmake -DSOURCE_DIR=<repo> -P tests/layering.cmake
# Prints every include that runs upward, and fails if there is one.

cmake_minimum_required(VERSION 3.22)

# Each part and the parts directly below it; a part may include from the closure.
set(below_base "")
set(below_topology base)
set(below_planner/spec topology)
set(below_planner/cost planner/spec)
set(below_planner/program planner/cost)
set(below_planner/search planner/program)
set(below_planner/fit planner/search)
set(below_traces/format planner/fit)
set(below_traces/import traces/format)
set(below_traces/analysis traces/import)
set(below_traces/report traces/analysis)
set(below_sim traces/report)
set(below_sim/ettr sim)
set(below_exec/model planner/fit)
set(below_exec/runtime exec/model traces/report)
set(below_exec/optim exec/runtime)
set(below_exec/parallel exec/optim)
set(below_exec/data exec/parallel)
set(below_exec/train exec/data)
set(below_exec/driver exec/train)
set(below_exec/cuda exec/runtime)
set(below_cli exec/driver sim/ettr)
set(parts base topology planner/spec planner/cost planner/program planner/search planner/fit traces/format
          traces/import traces/analysis traces/report sim sim/ettr exec/model exec/runtime exec/optim exec/parallel
          exec/data exec/train exec/driver exec/cuda cli)

# The closure of `part`'s parts below into ${out}.
function(closure part out)
  set(seen ${part})
  set(todo ${below_${part}})
  while(todo)
    list(POP_FRONT todo p)
    if(NOT p IN_LIST seen)
      list(APPEND seen ${p})
      list(APPEND todo ${below_${p}})
    endif()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# The part a path (relative to the root) belongs to: its folder, or the folder above it that is a
# part (sim/faults.h -> sim; planner/spec/x.h -> planner/spec); "" if none.
function(part_of path out)
  get_filename_component(dir ${path} DIRECTORY)
  while(dir)
    if(dir IN_LIST parts)
      set(${out} ${dir} PARENT_SCOPE)
      return()
    endif()
    get_filename_component(dir ${dir} DIRECTORY)
  endwhile()
  set(${out} "" PARENT_SCOPE)
endfunction()

set(upward 0)
set(checked 0)
foreach(part ${parts})
  closure(${part} allowed)
  file(GLOB files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/${part}/*.cc ${SOURCE_DIR}/${part}/*.h
       ${SOURCE_DIR}/${part}/*.cu ${SOURCE_DIR}/${part}/*.cuh)
  foreach(file ${files})
    math(EXPR checked "${checked} + 1")
    file(STRINGS ${SOURCE_DIR}/${file} includes REGEX "^#include \"[a-z_/]+\\.(h|cuh)\"")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" header "${line}")
      if(header MATCHES "\\.pb\\.h$")
        continue()
      endif()
      part_of(${header} to)
      if(to STREQUAL "" OR to IN_LIST allowed)
        continue()
      endif()
      message("${file} (${part}) includes ${header} (${to}): not a part below it")
      math(EXPR upward "${upward} + 1")
    endforeach()
  endforeach()
endforeach()
if(upward GREATER 0)
  message(FATAL_ERROR "layering: ${upward} includes run upward (CMakeLists.txt says the order)")
endif()
message("layering: ${checked} files, every include at or below its part")
