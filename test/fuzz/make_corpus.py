#!/usr/bin/env python3
"""Writes fusion-fuzz's seed corpus: every case of the lit suite's .mlir files.

usage: make_corpus.py SOURCE_ROOT OUT_DIR

Each file is split at `// -----` (the -split-input-file marker); comment lines
(RUN, CHECK, expected-error) are dropped; a case with fusion ops but no module
gets the module and its `fusion.target` (sm_90a) that the GPU lowering reads.
The file name is the case's source and index, so a crash on a seed names the
test it came from.
"""
import glob
import os
import re
import sys


def cases(root):
    files = sorted(glob.glob(os.path.join(root, 'test', '**', '*.mlir'), recursive=True))
    # test/fuzz/upstream: crashes of libMLIR itself, not seeds.
    files = [f for f in files if os.sep + os.path.join('fuzz', 'upstream') + os.sep not in f]
    for path in files:
        text = open(path, encoding='utf-8', errors='replace').read()
        for i, chunk in enumerate(re.split(r'^// -----\s*$', text, flags=re.M)):
            body = '\n'.join(l for l in chunk.splitlines() if not l.lstrip().startswith('//'))
            if not body.strip():
                continue
            if 'fusion.target' not in body and not re.search(r'^\s*module\b', body, re.M):
                body = ('module attributes {fusion.target = #fusion.target<"sm_90a">} {\n'
                        + body + '\n}\n')
            rel = os.path.relpath(path, root).replace(os.sep, '_')
            yield f'{rel}.{i}.mlir', body


def main():
    root, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    n = 0
    for name, body in cases(root):
        with open(os.path.join(out, name), 'w', encoding='utf-8') as f:
            f.write(body)
        n += 1
    print(f'make_corpus: {n} seeds in {out}')


if __name__ == '__main__':
    main()
