# uroce-nfq: NFQUEUE fault injector for the test lab (tests/lab, docs/faults.md).
# Built only when libnetfilter_queue is available (Debian:
# libnetfilter-queue-dev, which pulls libnfnetlink-dev).
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(UR_NFQ QUIET IMPORTED_TARGET libnetfilter_queue)
endif()
if(UR_NFQ_FOUND)
  add_executable(uroce-nfq ${CMAKE_CURRENT_LIST_DIR}/uroce-nfq.c)
  target_link_libraries(uroce-nfq PRIVATE PkgConfig::UR_NFQ uroce_wire)
else()
  message(STATUS "libnetfilter_queue not found: uroce-nfq (lab NFQUEUE faults) not built")
endif()
