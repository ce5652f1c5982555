# kscope view's page in headless Chromium (tests/view/browser).
#   view/npm_ci   installs the pinned playwright-core (package-lock.json)
#                 into ${CMAKE_BINARY_DIR}/view-browser, a fixture
#   view/browser  view_test.mjs: every tab on every bundled sample result,
#                 clicks, and no console errors; screenshots in
#                 ${CMAKE_BINARY_DIR}/test-artifacts/view
# The test script is copied next to node_modules because ES modules
# resolve packages from the importing file's directory (NODE_PATH does not
# apply to them).  KSCOPE_VIEW_SCREENSHOTS=DIR in the environment also
# writes the README's screenshots there.
find_program(KS_NODE node)
find_program(KS_NPM npm)
set(KS_VIEW_BROWSER_DIR ${CMAKE_BINARY_DIR}/view-browser)
set(KS_VIEW_BROWSER_SRC ${CMAKE_CURRENT_SOURCE_DIR}/browser)

if(NOT KS_NODE OR NOT KS_NPM OR NOT EXISTS /usr/bin/chromium)
  message(STATUS "view/browser: node, npm or /usr/bin/chromium missing; "
                 "scripts/install-deps.sh installs them")
  add_test(NAME view/browser
           COMMAND ${CMAKE_COMMAND} -E echo
                   "node, npm and /usr/bin/chromium are needed; run scripts/install-deps.sh")
  set_tests_properties(view/browser PROPERTIES WILL_FAIL TRUE)
  return()
endif()

add_test(NAME view/npm_ci
         COMMAND sh -c "mkdir -p '${KS_VIEW_BROWSER_DIR}' && \
cp '${KS_VIEW_BROWSER_SRC}/package.json' '${KS_VIEW_BROWSER_SRC}/package-lock.json' \
'${KS_VIEW_BROWSER_DIR}/' && cd '${KS_VIEW_BROWSER_DIR}' && \
'${KS_NPM}' ci --no-audit --no-fund")
set_tests_properties(view/npm_ci PROPERTIES FIXTURES_SETUP view_browser TIMEOUT 300)

add_test(NAME view/browser
         COMMAND sh -c "cp '${KS_VIEW_BROWSER_SRC}/view_test.mjs' '${KS_VIEW_BROWSER_DIR}/' && \
exec '${KS_NODE}' '${KS_VIEW_BROWSER_DIR}/view_test.mjs' --kscope \"$0\" \
--samples '${CMAKE_CURRENT_SOURCE_DIR}/samples' \
--artifacts '${CMAKE_BINARY_DIR}/test-artifacts/view'" $<TARGET_FILE:kscope>)
set_tests_properties(view/browser PROPERTIES FIXTURES_REQUIRED view_browser TIMEOUT 240)
