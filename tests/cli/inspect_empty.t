# an empty file is a container with no blocks
setup: touch e.bin
args: inspect e.bin
exit: 0
