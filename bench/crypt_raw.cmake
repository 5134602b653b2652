# crypt-raw: libgcrypt GCM per packet on one core (bench/crypt.sh's ceiling).
add_executable(crypt-raw ${CMAKE_CURRENT_LIST_DIR}/crypt_raw.c)
target_link_libraries(crypt-raw PRIVATE PkgConfig::GCRYPT)
