"""Extracts the PTX that `fusion-opt --fusion-to-gpu=format=isa` embeds in
its gpu.binary (the `assembly = "..."` string, MLIR-escaped), assembles it
with ptxas for the architecture (-arch, sm_90a by default), and prints one
line per kernel:

    ptxas ok: <kernel> registers=<n> spills=<bytes>

or the ptxas error. Exit code 1 if anything failed. With --sass CUOBJDUMP,
each module's SASS (cuobjdump -sass) and its ELF attributes
(cuobjdump -elf, the EIATTR_ lines) follow its kernels' lines.

    python3 ptxas_check.py PTXAS [-arch=sm_100a] [--sass CUOBJDUMP] < lowered.mlir
"""
import os
import re
import subprocess
import sys
import tempfile


def unescape(s):
    out, i = bytearray(), 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            nxt = s[i + 1]
            if nxt == "\\" or nxt == '"':
                out.append(ord(nxt))
                i += 2
            else:
                out.append(int(s[i + 1:i + 3], 16))
                i += 3
        else:
            out += c.encode()
            i += 1
    return out.decode()


def main():
    args = sys.argv[1:]
    ptxas, arch, cuobjdump = args[0], "sm_90a", None
    rest = args[1:]
    while rest:
        a = rest.pop(0)
        if a.startswith("-arch="):
            arch = a[len("-arch="):]
        elif a == "--sass":
            cuobjdump = rest.pop(0)
        else:
            print(f"unknown option {a}")
            return 1
    text = sys.stdin.read()
    blobs = re.findall(r'assembly = "((?:[^"\\]|\\.)*)"', text)
    if not blobs:
        print("no PTX found")
        return 1
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for n, blob in enumerate(blobs):
            ptx = unescape(blob)
            path = os.path.join(tmp, f"k{n}.ptx")
            open(path, "w").write(ptx)
            r = subprocess.run([ptxas, f"-arch={arch}", "-v", path, "-o", path + ".cubin"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"ptxas FAILED:\n{r.stderr}")
                failed = True
                continue
            info = r.stderr
            for kernel in re.findall(r"Compiling entry function '([^']+)'", info):
                sec = info.split(f"Compiling entry function '{kernel}'")[1]
                regs = re.search(r"Used (\d+) registers", sec)
                spill = re.search(r"(\d+) bytes spill stores", sec)
                print(f"ptxas ok: {kernel} registers={regs.group(1) if regs else '?'} "
                      f"spills={spill.group(1) if spill else '?'}")
            if cuobjdump:
                for what in ("-sass", "-elf"):
                    d = subprocess.run([cuobjdump, what, path + ".cubin"],
                                       capture_output=True, text=True)
                    if d.returncode != 0:
                        print(f"cuobjdump FAILED:\n{d.stderr}")
                        failed = True
                        continue
                    lines = d.stdout.splitlines()
                    if what == "-elf":
                        lines = [l for l in lines if "ATTR_" in l]
                    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
