# The server and the command line (server_test.py): the API over POST /api
# and the WebSocket, the limits, the page's files and path traversal, the
# Host and Origin checks, signals, a port in use and bad PATHs.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME view/server
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/server_test.py
                 $<TARGET_FILE:kscope> ${PROJECT_SOURCE_DIR})
set_tests_properties(view/server PROPERTIES TIMEOUT 180)
