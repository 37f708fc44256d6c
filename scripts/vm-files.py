#!/usr/bin/env python3
"""Writes the files a test VM printed on its console (BEGIN_FILE NAME, one base64 line, END_FILE)
into a directory: the VM cannot write the host's files.   scripts/vm-files.py VM_LOG DIR"""
import base64
import os
import sys

name = None
for line in open(sys.argv[1], errors="replace"):
    line = line.strip()
    if line.startswith("BEGIN_FILE "):
        name = os.path.basename(line.split(" ", 1)[1])
    elif name and line != "END_FILE" and line:
        with open(os.path.join(sys.argv[2], name), "wb") as out:
            out.write(base64.b64decode(line))
        name = None
