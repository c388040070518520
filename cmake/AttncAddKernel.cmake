# attnc_add_kernel(TARGET SOURCE file.attn [KERNELS name...] [TARGET_STRING t]
#                  [SCHEDULE tuned|simple|auto] [FLAGS ...])
#
# Runs attnc at build time on SOURCE and gives TARGET, a linkable static
# library of the generated kernels with the header TARGET.h on its include
# path; in the style of Halide's add_halide_library. attnc is the in-tree
# target `attnc` when present, else ATTNC_EXECUTABLE (set by the package
# config).
function(attnc_add_kernel TARGET)
  cmake_parse_arguments(ARG "" "SOURCE;TARGET_STRING;SCHEDULE" "KERNELS;FLAGS" ${ARGN})
  if(NOT ARG_SOURCE)
    message(FATAL_ERROR "attnc_add_kernel(${TARGET}): SOURCE is required")
  endif()
  get_filename_component(source "${ARG_SOURCE}" ABSOLUTE)
  if(TARGET attnc)
    set(compiler $<TARGET_FILE:attnc>)
    set(compiler_dep attnc)
  elseif(ATTNC_EXECUTABLE)
    set(compiler ${ATTNC_EXECUTABLE})
    set(compiler_dep ${ATTNC_EXECUTABLE})
  else()
    message(FATAL_ERROR "attnc_add_kernel(${TARGET}): no attnc; find_package(attnc) first")
  endif()

  set(flags ${ARG_FLAGS})
  foreach(kernel IN LISTS ARG_KERNELS)
    list(APPEND flags --kernel=${kernel})
  endforeach()
  if(ARG_TARGET_STRING)
    list(APPEND flags --target=${ARG_TARGET_STRING})
  endif()
  if(ARG_SCHEDULE)
    list(APPEND flags --schedule=${ARG_SCHEDULE})
  endif()

  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${TARGET}.attnc)
  set(object ${dir}/${TARGET}.o)
  set(header ${dir}/${TARGET}.h)
  add_custom_command(
    OUTPUT ${object} ${header}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${compiler} ${source} -o ${object} ${flags}
    DEPENDS ${source} ${compiler_dep}
    COMMENT "attnc ${ARG_SOURCE} -> ${TARGET}"
    VERBATIM)
  set_source_files_properties(${object} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  add_library(${TARGET} STATIC ${object} ${header})
  set_target_properties(${TARGET} PROPERTIES LINKER_LANGUAGE C)
  target_include_directories(${TARGET} INTERFACE $<BUILD_INTERFACE:${dir}>)
  find_package(Threads REQUIRED)
  target_link_libraries(${TARGET} INTERFACE Threads::Threads ${CMAKE_DL_LIBS} m)
endfunction()
