# Starts N copies of a command at the same moment and waits for all of them:
#   %python %inputs/concurrent.py N COMMAND ARGS...   ("{i}" in ARGS becomes 0..N-1)
# Prints each process's exit code and stderr, then how many said they compiled
# and how many loaded from the cache (attnc-run -v); fails if any process did.
import subprocess
import sys

n = int(sys.argv[1])
command = sys.argv[2:]
procs = [subprocess.Popen([a.replace("{i}", str(i)) for a in command],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
         for i in range(n)]
compiled = cached = failed = 0
for i, p in enumerate(procs):
    out, err = p.communicate()
    text = err.decode(errors="replace")
    print(f"process {i}: exit {p.returncode}")
    sys.stdout.write(text)
    compiled += "compiled into the cache" in text
    cached += "loaded from the cache" in text
    failed += p.returncode != 0
print(f"compiled {compiled}, loaded from the cache {cached}, failed {failed}")
sys.exit(1 if failed else 0)
