# Damages a copy of a file the ways that used to crash dlopen (issue 19):
#   %python %inputs/damage.py KIND IN OUT
# KIND: truncate-4096, truncate-half, random-second-half.
import random
import sys

kind, src, dst = sys.argv[1:4]
data = bytearray(open(src, "rb").read())
if kind == "truncate-4096":
    data = data[:4096]
elif kind == "truncate-half":
    data = data[: len(data) // 2]
elif kind == "random-second-half":
    r = random.Random(12345)
    for i in range(len(data) // 2, len(data)):
        data[i] = r.randrange(256)
else:
    sys.exit("damage.py: unknown kind " + kind)
open(dst, "wb").write(data)
