# invalid JSON is reported with its line and column before anything is written
setup: printf "{\n  \"multiple_rooflines\": [\n    {\"title\": \"t\",}\n  ]\n}\n" > r.json
args: pack --block roofline:r.json
exit: 2
nothing-written: yes
