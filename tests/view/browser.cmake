# kscope view's page in headless Chromium (tests/view/browser).
#   view/browser  view_test.py: every tab on every bundled sample result,
#                 clicks, and no console errors; screenshots in
#                 ${CMAKE_BINARY_DIR}/test-artifacts/view
# It drives Debian's /usr/bin/chromium through Debian's ChromeDriver
# (/usr/bin/chromedriver) with Debian's Selenium (python3-selenium), so it
# runs under Debian's own interpreter, /usr/bin/python3, whatever python3
# comes first in PATH.  All three come from scripts/install-deps.sh; the
# test fails, naming what is missing, when one of them is not there.
# KSCOPE_VIEW_SCREENSHOTS=DIR in the environment also writes the README's
# screenshots there.
set(KS_DEBIAN_PYTHON /usr/bin/python3)

if(NOT EXISTS ${KS_DEBIAN_PYTHON})
  add_test(NAME view/browser
           COMMAND ${CMAKE_COMMAND} -E echo
                   "${KS_DEBIAN_PYTHON} is missing; run scripts/install-deps.sh")
  set_tests_properties(view/browser PROPERTIES WILL_FAIL TRUE)
  return()
endif()

add_test(NAME view/browser
         COMMAND ${KS_DEBIAN_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/browser/view_test.py
                 --kscope $<TARGET_FILE:kscope>
                 --samples ${CMAKE_CURRENT_SOURCE_DIR}/samples
                 --artifacts ${CMAKE_BINARY_DIR}/test-artifacts/view)
set_tests_properties(view/browser PROPERTIES TIMEOUT 240)
