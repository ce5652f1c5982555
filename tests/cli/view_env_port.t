# a bad port from the environment is named as such
env: KSCOPE_VIEW_PORT=-1
args: view .
exit: 2
nothing-written: yes
