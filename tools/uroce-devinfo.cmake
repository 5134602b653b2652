# uroce-devinfo: ibv_devinfo -v for uroce devices, through the public API.
add_executable(uroce-devinfo ${CMAKE_CURRENT_LIST_DIR}/uroce-devinfo.c)
target_link_libraries(uroce-devinfo PRIVATE ibverbs)
