# a text file is not a container
setup: echo "hello world, this is text" > t.bin
args: inspect t.bin
exit: 1
