# nbc-overlap: overlap of non-blocking collectives with computation, OSU's
# definition (bench/nbc.sh); nbc-overlap-mpi is the same file on Open MPI.
if(TARGET uroce_coll)
  add_executable(nbc-overlap ${CMAKE_CURRENT_LIST_DIR}/nbc_overlap.c)
  target_link_libraries(nbc-overlap PRIVATE uroce_coll)
endif()
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  add_executable(nbc-overlap-mpi ${CMAKE_CURRENT_LIST_DIR}/nbc_overlap.c)
  target_compile_definitions(nbc-overlap-mpi PRIVATE UR_USE_MPI)
  target_link_libraries(nbc-overlap-mpi PRIVATE MPI::MPI_C)
endif()
