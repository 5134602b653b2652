# crypt-raw: GCM per packet on one core, libgcrypt and (if found) OpenSSL
# (bench/crypt.sh's ceiling).
add_executable(crypt-raw ${CMAKE_CURRENT_LIST_DIR}/crypt_raw.c)
target_link_libraries(crypt-raw PRIVATE PkgConfig::GCRYPT)
find_package(OpenSSL 3.0 COMPONENTS Crypto)
if(OpenSSL_FOUND)
  target_compile_definitions(crypt-raw PRIVATE HAVE_OPENSSL)
  target_link_libraries(crypt-raw PRIVATE OpenSSL::Crypto)
endif()
