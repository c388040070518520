# Runs a command, prints its stdout then its stderr, and succeeds only when the
# command's exit code is the expected one (lit's `not` cannot tell 1 from 2):
#   %python %inputs/expect_exit.py CODE COMMAND ARGS...
import subprocess
import sys

expected = int(sys.argv[1])
result = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
sys.stdout.write(result.stdout.decode(errors="replace"))
sys.stdout.write(result.stderr.decode(errors="replace"))
if result.returncode != expected:
    print(f"expect_exit.py: exit code {result.returncode}, expected {expected}")
    sys.exit(1)
