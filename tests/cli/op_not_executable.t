# the program must be executable
setup: printf 'int main;' > prog && chmod 0644 prog
args: op --output out -- ./prog
exit: 2
nothing-written: yes
