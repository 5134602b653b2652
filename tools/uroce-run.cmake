# uroce-run: shell wrapper that puts build/lib first in LD_LIBRARY_PATH.
# The build tree's copy finds the libraries in build/lib; the installed
# one (packaging/install.cmake) in the private <libdir>/uroce.
set(UROCE_RUN_LIBDIR lib)
configure_file(${CMAKE_CURRENT_LIST_DIR}/uroce-run
  ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/uroce-run @ONLY)

# A sanitized build's libraries need the ASan/UBSan runtimes loaded first,
# which an uninstrumented program (perftest, python3, rping) does not do:
# uroce-run preloads the runtimes this file names.
set(_preload ${CMAKE_LIBRARY_OUTPUT_DIRECTORY}/uroce-preload)
if(UROCE_SANITIZE)
  set(_rt "")
  foreach(_lib libasan.so libubsan.so)
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${_lib}
      OUTPUT_VARIABLE _path OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT IS_ABSOLUTE "${_path}" OR NOT EXISTS "${_path}")
      message(FATAL_ERROR "UROCE_SANITIZE: ${CMAKE_C_COMPILER} has no ${_lib}")
    endif()
    list(APPEND _rt ${_path})
  endforeach()
  list(JOIN _rt " " _rt)
  file(WRITE ${_preload} "${_rt}\n")
else()
  file(REMOVE ${_preload})
endif()
