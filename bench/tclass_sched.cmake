# tclass-sched: traffic classes under a device rate limit, one process
# (bench/tclass_sched.sh runs it).
add_executable(tclass-sched ${CMAKE_CURRENT_LIST_DIR}/tclass_sched.c)
target_link_libraries(tclass-sched PRIVATE ibverbs Threads::Threads)
