# uroce-launch: start N ranks on uroce with torchrun-style env (python3).
# The build tree's copy finds the libraries in build/lib; the installed
# one (packaging/install.cmake) in the private <libdir>/uroce.
set(UROCE_RUN_LIBDIR lib)
configure_file(${CMAKE_CURRENT_LIST_DIR}/uroce-launch
  ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/uroce-launch @ONLY)
