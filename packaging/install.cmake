# Install rules and the Debian package (CPack DEB).
#
# Layout under the prefix (docs/install.md):
#   bin/uroce-*                          the tools
#   <libdir>/uroce/libibverbs.so.1,      uroce's drop-in rdma-core libraries and
#     librdmacm.so.1, liburoce_view.so   the device view: a private directory,
#                                        so they never shadow the system's
#                                        rdma-core; uroce-run and uroce-launch
#                                        put it first on the library path
#   <libdir>/liburoce_coll.so.0          the collectives (public verbs API only,
#                                        runs on real NICs too: a normal library)
#   <libdir>/pkgconfig/uroce*.pc, include/uroce/*.h, share/man, python3 package
# <libdir> is lib/<multiarch> (lib/x86_64-linux-gnu on Debian amd64).

set(UROCE_PKGLIBDIR ${CMAKE_INSTALL_LIBDIR}/uroce)

# The tools that link our libibverbs find it in the private directory.
set(_priv_rpath "$ORIGIN/../${UROCE_PKGLIBDIR}")
foreach(t uroce-devinfo uroce-view)
  if(TARGET ${t})
    set_target_properties(${t} PROPERTIES INSTALL_RPATH "${_priv_rpath}")
  endif()
endforeach()
set_target_properties(rdmacm PROPERTIES INSTALL_RPATH "$ORIGIN")
if(TARGET uroce-coll-perf)
  set_target_properties(uroce-coll-perf PROPERTIES
    INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()

install(TARGETS ibverbs rdmacm uroce_view
  LIBRARY DESTINATION ${UROCE_PKGLIBDIR} NAMELINK_SKIP)
if(TARGET uroce_coll)
  install(TARGETS uroce_coll LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
# A sanitized build's uroce-run preloads the runtimes this file names
# (tools/uroce-run.cmake); installing it keeps an installed ASan build usable.
if(UROCE_SANITIZE)
  install(FILES ${CMAKE_LIBRARY_OUTPUT_DIRECTORY}/uroce-preload
    DESTINATION ${UROCE_PKGLIBDIR})
endif()

foreach(t uroce-coll-perf uroce-decode uroce-devinfo uroce-nfq uroce-settings
          uroce-sim uroce-stat uroce-view)
  if(TARGET ${t})
    install(TARGETS ${t} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
# The scripts, with the private directory's place relative to bin/.
set(UROCE_RUN_LIBDIR ${UROCE_PKGLIBDIR})
foreach(s uroce-run uroce-launch)
  configure_file(${PROJECT_SOURCE_DIR}/tools/${s} ${CMAKE_BINARY_DIR}/packaging/${s} @ONLY)
  install(PROGRAMS ${CMAKE_BINARY_DIR}/packaging/${s}
    DESTINATION ${CMAKE_INSTALL_BINDIR})
endforeach()

install(FILES ${PROJECT_SOURCE_DIR}/include/uroce/uroce.h
  ${PROJECT_SOURCE_DIR}/include/uroce/coll.h
  ${PROJECT_SOURCE_DIR}/include/uroce/stat.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/uroce)

file(RELATIVE_PATH UROCE_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
foreach(pc uroce uroce-coll)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in
    ${CMAKE_BINARY_DIR}/packaging/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/packaging/${pc}.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

file(GLOB _man1 ${PROJECT_SOURCE_DIR}/man/*.1)
file(GLOB _man7 ${PROJECT_SOURCE_DIR}/man/*.7)
install(FILES ${_man1} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${_man7} DESTINATION ${CMAKE_INSTALL_MANDIR}/man7)

# Debian's python3 looks in lib/python3/dist-packages under /usr.
set(UROCE_PYTHON_DIR lib/python3/dist-packages CACHE STRING
  "where the uroce python package is installed, relative to the prefix")
install(FILES ${PROJECT_SOURCE_DIR}/python/uroce/__init__.py
  ${PROJECT_SOURCE_DIR}/python/uroce/ddp.py DESTINATION ${UROCE_PYTHON_DIR}/uroce)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/deploy.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR} OPTIONAL)

# Debian package: cpack -G DEB --config build/CPackConfig.cmake (or
# `cmake --build build --target package`). Dependencies are named here, not
# found by dpkg-shlibdeps: our own libibverbs.so.1 in the private directory
# would be resolved to the system's libibverbs1 (docs/install.md).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME uroce)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "uroce developers <uroce@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "software RoCEv2 RDMA NIC in user space (drop-in libibverbs/librdmacm)")
set(CPACK_PACKAGE_DESCRIPTION
  "uroce speaks RoCEv2 from user space and offers it through drop-in builds of
libibverbs.so.1 and librdmacm.so.1, kept in a private directory so the
system's rdma-core stays in charge; uroce-run CMD runs an unmodified RDMA
program on it.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(_deps "libc6 (>= 2.36), libibverbs1, libpcap0.8, python3")
if(TARGET uroce-nfq)
  string(APPEND _deps ", libnetfilter-queue1, libnfnetlink0")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_deps}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ibverbs-utils, perftest, rdmacm-utils")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-numpy, python3-torch")
include(CPack)
