#!/bin/sh
# A stand-in for a compiler, for kscope tune's strategy tests: reads X
# and Y from the variant $1 (grid.c), writes $2, a program printing the
# planted time 1000 + 10 * ((X - 7)^2 + (Y - 4)^2) ns, and appends
# "X Y" to the log $3, so the test can count the builds.
x=$(sed -n 's/^#define X \([0-9-]*\) .*/\1/p' "$1")
y=$(sed -n 's/^#define Y \([0-9-]*\) .*/\1/p' "$1")
t=$(( 1000 + 10 * ((x - 7) * (x - 7) + (y - 4) * (y - 4)) ))
printf '#!/bin/sh\necho KSCOPE_TIME_NS=%s\n' "$t" > "$2"
chmod +x "$2"
echo "$x $y" >> "$3"
