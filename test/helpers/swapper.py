#!/usr/bin/env python3
"""A racer for the tree-removal tests: swaps each directory BASE/d<i> with
the symlink BASE/l<i> (to an outside directory) by renameat2(2) with
RENAME_EXCHANGE, over and over, until killed, so that a remover that
decides "directory" with one call and reads it by path with the next is
sent through the link. Prints "ready" once it has swapped every pair
once. Usage: swapper.py BASE N"""
import ctypes
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
renameat2 = libc.renameat2
renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
AT_FDCWD = -100
RENAME_EXCHANGE = 2

base, n = sys.argv[1], int(sys.argv[2])
pairs = [(os.path.join(base, f"d{i}").encode(), os.path.join(base, f"l{i}").encode()) for i in range(n)]
first = True
while True:
    for d, link in pairs:
        renameat2(AT_FDCWD, d, AT_FDCWD, link, RENAME_EXCHANGE)
    if first:
        print("ready", flush=True)
        first = False
