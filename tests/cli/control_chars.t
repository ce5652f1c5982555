# control characters in a value are shown escaped, never sent to the terminal
args: pack --block "$(printf "roof\033[31mline:x")"
exit: 2
nothing-written: yes
