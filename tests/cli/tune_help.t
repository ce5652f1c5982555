# kscope tune --help shows the usage, the description and the options
args: tune --help
exit: 0
