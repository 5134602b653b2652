# uroce-stat: counters of every running uroce process (/dev/shm files).
add_executable(uroce-stat ${CMAKE_CURRENT_LIST_DIR}/uroce-stat.c)
target_include_directories(uroce-stat PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(uroce-stat PRIVATE uroce_util)
