# uroce-run: shell wrapper that puts build/lib first in LD_LIBRARY_PATH.
configure_file(${CMAKE_CURRENT_LIST_DIR}/uroce-run
  ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/uroce-run COPYONLY)
