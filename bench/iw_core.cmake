# iw-core-bench: the iWARP connection core (src/transport/iw_conn.c) alone,
# two cores joined in memory: the CPU cost of the protocol without sockets.
add_executable(iw-core-bench ${CMAKE_CURRENT_LIST_DIR}/iw_core.c)
target_link_libraries(iw-core-bench PRIVATE uroce_transport)
