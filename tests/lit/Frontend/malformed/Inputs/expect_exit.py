#!/usr/bin/env python3
# Runs a command and succeeds only when it exits with the expected code (never
# a signal), forwarding its stderr and stdout so FileCheck can read them.
# usage: expect_exit.py CODE COMMAND ARGS...
import subprocess
import sys

expected = int(sys.argv[1])
result = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
sys.stdout.buffer.write(result.stdout)
if result.returncode != expected:
    sys.stdout.write("expect_exit.py: exit code %d, expected %d\n" % (result.returncode, expected))
    sys.exit(1)
