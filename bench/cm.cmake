# cm-connect: rdma_cm connection setup latency and connections per second
# (bench/cm.sh runs it through uroce-run). Built against the system
# <rdma/rdma_cma.h>, linked to our librdmacm (any librdmacm works at run time).
add_executable(cm-connect ${CMAKE_CURRENT_LIST_DIR}/cm_connect.c)
target_link_libraries(cm-connect PRIVATE rdmacm ibverbs)
