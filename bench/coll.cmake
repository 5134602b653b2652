# coll-mpi-perf: the Open MPI side of bench/coll.sh (needs libopenmpi-dev).
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  add_executable(coll-mpi-perf ${CMAKE_CURRENT_LIST_DIR}/coll_mpi_perf.c)
  target_link_libraries(coll-mpi-perf PRIVATE MPI::MPI_C)
endif()
