# kscope view's page in headless Chromium (tests/view/browser).
#   view/browser         view_test.py: every tab on every bundled sample
#                        result, clicks, and no console errors; screenshots
#                        in ${CMAKE_BINARY_DIR}/test-artifacts/view
#   view/browser_clocks  clocks_test.py: the Profile tab of a fresh run of
#                        burn_sleep (tests/sample/store) with both timers
#                        and counters: the timers shown apart, each cell
#                        the API's and kscope report's value
#   view/browser_causal  causal_test.py: the Causal tab of a fresh kscope
#                        causal run of examples/causal/balance.c: one
#                        chart per curve, its points where their values
#                        fall, each table cell causal.csv's value; a
#                        malformed causal.csv's message shown
# It drives Debian's /usr/bin/chromium through Debian's ChromeDriver
# (/usr/bin/chromedriver) with Debian's Selenium (python3-selenium), so it
# runs under Debian's own interpreter, /usr/bin/python3, whatever python3
# comes first in PATH.  All three come from scripts/install-deps.sh; the
# test fails, naming what is missing, when one of them is not there.
# KSCOPE_VIEW_SCREENSHOTS=DIR in the environment also writes the README's
# screenshots there.
set(KS_DEBIAN_PYTHON /usr/bin/python3)

if(NOT EXISTS ${KS_DEBIAN_PYTHON})
  foreach(t view/browser view/browser_clocks view/browser_causal)
    add_test(NAME ${t}
             COMMAND ${CMAKE_COMMAND} -E echo
                     "${KS_DEBIAN_PYTHON} is missing; run scripts/install-deps.sh")
    set_tests_properties(${t} PROPERTIES WILL_FAIL TRUE)
  endforeach()
  return()
endif()

add_test(NAME view/browser
         COMMAND ${KS_DEBIAN_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/browser/view_test.py
                 --kscope $<TARGET_FILE:kscope>
                 --samples ${CMAKE_CURRENT_SOURCE_DIR}/samples
                 --artifacts ${CMAKE_BINARY_DIR}/test-artifacts/view)
set_tests_properties(view/browser PROPERTIES TIMEOUT 240)

add_test(NAME view/browser_clocks
         COMMAND ${KS_DEBIAN_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/browser/clocks_test.py
                 --kscope $<TARGET_FILE:kscope>
                 --burn $<TARGET_FILE:ks_burn_sleep>
                 --artifacts ${CMAKE_BINARY_DIR}/test-artifacts/view)
set_tests_properties(view/browser_clocks PROPERTIES TIMEOUT 180)

add_test(NAME view/browser_causal
         COMMAND ${KS_DEBIAN_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/browser/causal_test.py
                 --kscope $<TARGET_FILE:kscope>
                 --examples ${PROJECT_SOURCE_DIR}/examples/causal
                 --include ${PROJECT_SOURCE_DIR}/include
                 --artifacts ${CMAKE_BINARY_DIR}/test-artifacts/view)
set_tests_properties(view/browser_causal PROPERTIES TIMEOUT 180)
