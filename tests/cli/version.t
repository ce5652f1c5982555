# kscope --version prints the version
args: --version
exit: 0
post: grep -qx "kscope [0-9]*\.[0-9]*\.[0-9]*" "$KS_STDOUT"
