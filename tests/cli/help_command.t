# kscope help CMD and kscope CMD --help print the same text, from the option table
args: help inspect
exit: 0
post: "$KSCOPE" inspect --help | cmp - "$KS_STDOUT"
post: "$KSCOPE" inspect -h | cmp - "$KS_STDOUT"
