# timer-walks: how often a poster streaming 64 B WRITEs makes the engine
# walk its QP table (counter eng_timer_walks; docs/engine.md, timers).
add_executable(timer-walks ${CMAKE_CURRENT_LIST_DIR}/timer_walks.c)
target_link_libraries(timer-walks PRIVATE ibverbs)
target_include_directories(timer-walks PRIVATE ${PROJECT_SOURCE_DIR}/tests/verbs)
