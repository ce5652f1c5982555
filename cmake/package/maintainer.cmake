# The package's maintainer, as Debian's tools (dch, debuild) take it: the
# environment's DEBFULLNAME and DEBEMAIL, else the user at this host.
# Read when cpack runs (CPACK_PROJECT_CONFIG_FILE) and when the changelog
# is installed, so the packager's environment of that time counts.
if(DEFINED ENV{DEBEMAIL} AND NOT "$ENV{DEBEMAIL}" STREQUAL "")
  if("$ENV{DEBEMAIL}" MATCHES "<")
    set(KS_MAINTAINER "$ENV{DEBEMAIL}")
  elseif(DEFINED ENV{DEBFULLNAME} AND NOT "$ENV{DEBFULLNAME}" STREQUAL "")
    set(KS_MAINTAINER "$ENV{DEBFULLNAME} <$ENV{DEBEMAIL}>")
  else()
    set(KS_MAINTAINER "kscope packager <$ENV{DEBEMAIL}>")
  endif()
else()
  cmake_host_system_information(RESULT ks_host QUERY FQDN)
  set(ks_user "$ENV{USER}")
  if(ks_user STREQUAL "")
    set(ks_user "root")
  endif()
  set(KS_MAINTAINER "kscope packager <${ks_user}@${ks_host}>")
endif()
set(CPACK_PACKAGE_CONTACT "${KS_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${KS_MAINTAINER}")
