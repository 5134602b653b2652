# copy-rate: one core's memcpy rate, the reference of bench/shm_write.sh.
add_executable(copy-rate ${CMAKE_CURRENT_LIST_DIR}/copy_rate.c)
