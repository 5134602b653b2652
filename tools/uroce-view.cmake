# uroce-view: writes the device view tree uroce-run hands to liburoce_view.so.
add_executable(uroce-view ${CMAKE_CURRENT_LIST_DIR}/uroce-view.c)
target_link_libraries(uroce-view PRIVATE ibverbs)
