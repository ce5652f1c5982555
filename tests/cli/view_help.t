# view help lists its two options with their ranges, defaults and variables
args: view --help
exit: 0
