# uroce-sim: discrete-event simulator running the real transport (docs/sim.md).
add_executable(uroce-sim ${CMAKE_CURRENT_LIST_DIR}/uroce-sim.c)
target_link_libraries(uroce-sim PRIVATE uroce_sim)
