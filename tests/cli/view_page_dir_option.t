# the page's files are found next to kscope: there is no option for them
args: view --page-dir /tmp .
exit: 2
nothing-written: yes
