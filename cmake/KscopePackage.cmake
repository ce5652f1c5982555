# What an installed kscope offers other programs, and the Debian package.
#   - the CMake package: find_package(kscope) gives kscope::user,
#     kscope::predict, kscope::tune and kscope::vizbin (lib/cmake/kscope)
#   - pkg-config files kscope-user.pc, kscope-predict.pc, kscope-tune.pc
#     and kscope-vizbin.pc (lib/pkgconfig), relocatable: their prefix is
#     ${pcfiledir}/../..
#   - kscope.pth in the Python site directory of the prefix, which puts
#     lib/kscope/python on Debian's python3 path (import kscope.predict)
#   - `make deb` (the `deb` target): CPack's DEB generator, Depends found
#     by dpkg-shlibdeps
include(CMakePackageConfigHelpers)

install(EXPORT kscopeTargets NAMESPACE kscope::
        DESTINATION ${KS_INSTALL_LIBDIR}/cmake/kscope)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/package/kscopeConfig.cmake.in
  ${CMAKE_BINARY_DIR}/package/kscopeConfig.cmake
  INSTALL_DESTINATION ${KS_INSTALL_LIBDIR}/cmake/kscope)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/kscopeConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/kscopeConfig.cmake
              ${CMAKE_BINARY_DIR}/package/kscopeConfigVersion.cmake
        DESTINATION ${KS_INSTALL_LIBDIR}/cmake/kscope)

foreach(pc kscope-user kscope-predict kscope-tune kscope-vizbin)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/package/${pc}.pc.in
                 ${CMAKE_BINARY_DIR}/package/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/package/${pc}.pc
          DESTINATION ${KS_INSTALL_LIBDIR}/pkgconfig)
endforeach()

# Debian's python3 looks in <prefix>/lib/python3/dist-packages for /usr
# and in <prefix>/lib/python3.X/dist-packages for any other prefix
# (/usr/local); the prefix is known only when installing (CPack installs
# with /usr).  The file's line is relative to its own directory.
set(KS_PYTHON_MINOR "")
if(EXISTS /usr/bin/python3)
  execute_process(COMMAND /usr/bin/python3 -c
                    "import sys; print('%d.%d' % sys.version_info[:2])"
                  OUTPUT_VARIABLE KS_PYTHON_MINOR OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET)
endif()
file(WRITE ${CMAKE_BINARY_DIR}/package/kscope.pth "../../kscope/python\n")
if(KS_PYTHON_MINOR)
  install(CODE "
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
      set(ks_site lib/python3/dist-packages)
    else()
      set(ks_site lib/python${KS_PYTHON_MINOR}/dist-packages)
    endif()
    file(INSTALL \"${CMAKE_BINARY_DIR}/package/kscope.pth\"
         DESTINATION \"\${CMAKE_INSTALL_PREFIX}/\${ks_site}\")
  ")
else()
  message(STATUS "install: no /usr/bin/python3, so no kscope.pth: put "
                 "<prefix>/${KS_INSTALL_PRIVLIB}/python on PYTHONPATH")
endif()

# A direct install as root into /usr/local or /usr updates the loader's
# cache, so that programs find libkscope-user.so without LD_LIBRARY_PATH
# (the .deb does this through its ldconfig trigger; DESTDIR installs are
# staged, not live).
install(CODE "
  if(\"\$ENV{DESTDIR}\" STREQUAL \"\" AND CMAKE_INSTALL_PREFIX MATCHES \"^/usr(/local)?$\")
    execute_process(COMMAND id -u OUTPUT_VARIABLE ks_uid OUTPUT_STRIP_TRAILING_WHITESPACE)
    find_program(ks_ldconfig ldconfig PATHS /sbin /usr/sbin)
    if(ks_uid STREQUAL \"0\" AND ks_ldconfig)
      message(STATUS \"Running ldconfig\")
      execute_process(COMMAND \${ks_ldconfig})
    endif()
  endif()
")

# The .deb: scripts/make-deb.sh configures a build of its own (prefix
# /usr, shared dependencies: KSCOPE_STATIC_DEPS=OFF, since Debian does not
# embed zlib or bzip2 in a package's executable), builds it and runs cpack.
# CPack installs with the prefix /usr through DESTDIR, so install(CODE)
# above sees /usr.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "performance-analysis toolkit for kernel and HPC developers")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
"kscope profiles programs by sampling, profiles and replays OpenCL kernels,
 checks heaps, finds cache contention and false sharing, predicts kernel
 performance, tunes kernel parameters, and shows every result in a local
 web viewer.")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
# Depends: what the executable and libraries link (dpkg-shlibdeps), and
# what kscope runs or loads: Valgrind for memcheck/contention/falseshare
# and op --simulate, capstone (dlopen) for op --simulate's disassembly,
# civetweb (dlopen) for view's web server.
# An OpenCL device and python3 are for some commands only.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "valgrind, libcapstone4, libcivetweb1")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ocl-icd-libopencl1 | libopencl1, python3")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "pocl-opencl-icd, openmpi-bin")
# A shlibs file and the ldconfig trigger for the public libraries.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/package/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# The maintainer is the packager's, as Debian's tools take it: DEBFULLNAME
# and DEBEMAIL when cpack runs (package/maintainer.cmake).
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/package/maintainer.cmake)
set(CPACK_PACKAGE_CONTACT "kscope")
include(${PROJECT_SOURCE_DIR}/cmake/package/maintainer.cmake)

# Debian's per-package documents: the copyright file, the changelog
# (written at install time, with the maintainer of that time), and the
# override for the Valgrind tool, which is a static executable as every
# Valgrind tool is.
install(FILES ${PROJECT_SOURCE_DIR}/cmake/package/copyright DESTINATION share/doc/kscope)
configure_file(${PROJECT_SOURCE_DIR}/cmake/package/lintian-overrides.in
               ${CMAKE_BINARY_DIR}/package/lintian-overrides @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/lintian-overrides
        DESTINATION share/lintian/overrides RENAME kscope)
install(CODE "
  include(\"${PROJECT_SOURCE_DIR}/cmake/package/maintainer.cmake\")
  # (TIMESTAMP honours SOURCE_DATE_EPOCH, for reproducible packages)
  string(TIMESTAMP ks_date \"%a, %d %b %Y %H:%M:%S +0000\" UTC)
  file(WRITE \"${CMAKE_BINARY_DIR}/package/changelog\"
\"kscope (${PROJECT_VERSION}) unstable; urgency=medium

  * Packaged from kscope's source, version ${PROJECT_VERSION}.

 -- \${KS_MAINTAINER}  \${ks_date}
\")
  execute_process(COMMAND gzip -9nf \"${CMAKE_BINARY_DIR}/package/changelog\")
  file(INSTALL \"${CMAKE_BINARY_DIR}/package/changelog.gz\"
       DESTINATION \"\${CMAKE_INSTALL_PREFIX}/share/doc/kscope\")
")
include(CPack)
