# uroce-launch: start N ranks on uroce with torchrun-style env (python3).
configure_file(${CMAKE_CURRENT_LIST_DIR}/uroce-launch
  ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/uroce-launch COPYONLY)
