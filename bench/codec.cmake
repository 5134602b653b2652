# codec-bench: wire codec + ICRC throughput against zlib crc32().
find_package(ZLIB)
if(ZLIB_FOUND)
  add_executable(codec-bench ${CMAKE_CURRENT_LIST_DIR}/codec.c)
  target_link_libraries(codec-bench PRIVATE uroce_wire ZLIB::ZLIB)
else()
  message(WARNING "zlib not found (apt-get install zlib1g-dev): codec-bench not built")
endif()
