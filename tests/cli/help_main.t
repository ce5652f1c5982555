# kscope --help lists the commands
args: --help
exit: 0
