# uring-pp: a bare UDP ping-pong with recvmsg vs io_uring multishot receive
# (raw system calls, no liburing), the kernel's floor under a spinning poller.
add_executable(uring-pp ${CMAKE_CURRENT_LIST_DIR}/uring_pp.c)
