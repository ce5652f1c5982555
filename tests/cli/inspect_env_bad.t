# a bad value from the environment is named as such
setup: touch f.bin
env: KSCOPE_INSPECT_FORMAT=xml
args: inspect f.bin
exit: 2
nothing-written: yes
