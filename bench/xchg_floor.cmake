# xchg-floor: a 2-process exchange over loopback TCP or UDP GSO/GRO with no
# uroce code, the kernel's floor under a 2-rank alltoall (docs/collectives.md).
add_executable(xchg-floor ${CMAKE_CURRENT_LIST_DIR}/xchg_floor.c)
