# attnc_add_kernel(TARGET SOURCE file.attn [KERNELS name...] [TARGET_STRING t]
#                  [SCHEDULE tuned|simple|auto] [FLAGS ...])
#
# Runs attnc at build time on SOURCE and gives TARGET, a linkable static
# library of the generated kernels with the header TARGET.h on its include
# path; in the style of Halide's add_halide_library. attnc is the in-tree
# target `attnc` when present, else ATTNC_EXECUTABLE (set by the package
# config).
#
# Like add_halide_library, the kernels are compiled without a Halide runtime
# (--no-runtime) and TARGET links one runtime shared by every kernel of the
# app: for the host target, the shared runtime library shipped with attnc
# (in-tree `attnc_halide_runtime`, installed `attnc::halide_runtime`), the
# same one libattnrt and `attnc -o x.so` libraries use, so the whole process
# has one thread pool; for another TARGET_STRING, one static runtime per
# distinct target string in the project (`attnc --emit=runtime`).

# The runtime target for `target_string` ("" = host); creates it once.
function(_attnc_runtime_for target_string compiler compiler_dep out_var)
  if(target_string STREQUAL "" OR target_string STREQUAL "host")
    if(TARGET attnc_halide_runtime)
      set(${out_var} attnc_halide_runtime PARENT_SCOPE)
      return()
    elseif(TARGET attnc::halide_runtime)
      set(${out_var} attnc::halide_runtime PARENT_SCOPE)
      return()
    endif()
    set(target_string host)
  endif()
  string(MAKE_C_IDENTIFIER "${target_string}" id)
  set(runtime attnc_runtime_${id})
  if(NOT TARGET ${runtime})
    set(object ${CMAKE_BINARY_DIR}/attnc_runtimes/${runtime}.o)
    add_custom_command(
      OUTPUT ${object}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/attnc_runtimes
      COMMAND ${compiler} --emit=runtime --target=${target_string} -o ${object}
      DEPENDS ${compiler_dep}
      COMMENT "attnc --emit=runtime --target=${target_string}"
      VERBATIM)
    set_source_files_properties(${object} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    add_library(${runtime} STATIC ${object})
    set_target_properties(${runtime} PROPERTIES LINKER_LANGUAGE C)
    find_package(Threads REQUIRED)
    target_link_libraries(${runtime} INTERFACE Threads::Threads ${CMAKE_DL_LIBS} m)
  endif()
  set(${out_var} ${runtime} PARENT_SCOPE)
endfunction()

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

  set(flags ${ARG_FLAGS} --no-runtime)
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
  _attnc_runtime_for("${ARG_TARGET_STRING}" "${compiler}" "${compiler_dep}" runtime)
  find_package(Threads REQUIRED)
  target_link_libraries(${TARGET} INTERFACE ${runtime} Threads::Threads ${CMAKE_DL_LIBS} m)
endfunction()
