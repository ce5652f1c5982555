# pack help lists every option with its range, default and environment variable
args: pack --help
exit: 0
