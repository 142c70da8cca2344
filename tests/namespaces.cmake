# The namespace rule (README, "Namespaces"), checked on the sources: each file's code opens the
# namespace its folder names: `megascale` for base/, planner/, sim/ and traces/; one sub-namespace
# named for the folder for topology/, exec/ and cli/, and `megascale::validation` for the scenario
# rules (planner/spec/validate_*). A file's first named namespace is what it declares in (a
# forward declaration of another part's class sits inside it). cli/megascale_main.cc holds only
# main().
#   cmake -DSOURCE_DIR=<repo> -P tests/namespaces.cmake
# Prints every file in another namespace, and fails if there is one.

cmake_minimum_required(VERSION 3.22)

function(expected_namespace path out)
  if(path MATCHES "^exec/")
    set(ns megascale::exec)
  elseif(path MATCHES "^topology/")
    set(ns megascale::topology)
  elseif(path MATCHES "^cli/")
    set(ns megascale::cli)
  elseif(path MATCHES "^planner/spec/validate_")
    set(ns megascale::validation)
  else()
    set(ns megascale)
  endif()
  set(${out} ${ns} PARENT_SCOPE)
endfunction()

set(globs "")
foreach(part base topology planner sim traces exec cli)
  foreach(ext cc h cu cuh)
    list(APPEND globs ${SOURCE_DIR}/${part}/*.${ext})
  endforeach()
endforeach()
file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR} ${globs})
set(wrong 0)
set(checked 0)
foreach(file ${files})
  if(file STREQUAL "cli/megascale_main.cc")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  file(READ ${SOURCE_DIR}/${file} text)
  # "namespace megascale {" and, on the next line, "namespace exec {": megascale::exec.
  string(REGEX MATCH "namespace [a-z_:]+ {\n(namespace [a-z_]+ {\n)?" opening "${text}")
  string(REGEX REPLACE "namespace ([a-z_:]+) {\n" "\\1::" found "${opening}")
  string(REGEX REPLACE "::$" "" found "${found}")
  expected_namespace(${file} want)
  if(NOT found STREQUAL want)
    if(found STREQUAL "")
      set(found "none")
    endif()
    message("${file}: in ${found}, its folder's is ${want}")
    math(EXPR wrong "${wrong} + 1")
  endif()
endforeach()
if(wrong GREATER 0)
  message(FATAL_ERROR "namespaces: ${wrong} files outside their folder's namespace (README, \"Namespaces\")")
endif()
message("namespaces: ${checked} files, each in its folder's namespace")
