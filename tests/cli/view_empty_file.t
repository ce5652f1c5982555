# an empty file is not a result: the message names it and what is accepted
setup: touch empty.json
args: view --port 0 empty.json
exit: 2
nothing-written: yes
post: grep -q '^kscope: error: .*/empty.json: .*accept' $KS_STDERR
post: test ! -s $KS_STDOUT
