# lat-1thread: one message one way, both ends in one thread (no scheduler):
# uroce verbs RC SEND vs plain UDP sockets (bench/run.sh prints both).
add_executable(lat-1thread ${CMAKE_CURRENT_LIST_DIR}/lat_1thread.c)
target_link_libraries(lat-1thread PRIVATE ibverbs)
target_include_directories(lat-1thread PRIVATE ${PROJECT_SOURCE_DIR}/tests/verbs)
