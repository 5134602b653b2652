# idle-cpu: the CPU an idle device context costs (connected RC QPs, no
# traffic; bench/run.sh reports it against the 1 % target).
add_executable(idle-cpu ${CMAKE_CURRENT_LIST_DIR}/idle_cpu.c)
target_link_libraries(idle-cpu PRIVATE ibverbs)
target_include_directories(idle-cpu PRIVATE ${PROJECT_SOURCE_DIR}/tests/verbs)
