# uroce-coll-perf: nccl-tests style collective bandwidth (liburoce_coll).
if(TARGET uroce_coll)
  add_executable(uroce-coll-perf ${CMAKE_CURRENT_LIST_DIR}/uroce-coll-perf.c)
  target_link_libraries(uroce-coll-perf PRIVATE uroce_coll uroce_util m)
endif()
