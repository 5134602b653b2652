# uroce-settings: every UROCE_* setting from the one table (src/util/settings.c).
add_executable(uroce-settings ${CMAKE_CURRENT_LIST_DIR}/uroce-settings.c)
target_link_libraries(uroce-settings PRIVATE uroce_util)
