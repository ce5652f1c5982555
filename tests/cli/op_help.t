# kscope op --help lists every option with its range, default and environment variable
args: op --help
exit: 0
