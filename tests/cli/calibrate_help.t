# calibrate's help lists its options with their ranges and environment variables
args: calibrate --help
exit: 0
