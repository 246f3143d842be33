#!/usr/bin/env python3
"""The import graph of src/: its modules as nodes, `crate::…` paths as edges, read against the
layers docs/ARCHITECTURE.md gives them, top-down. Prints every edge that runs from a lower layer
back up, every cycle (a strongly connected set of more than one module), the largest files and
functions; exits 1 when the counts pass the limits given (--max-up, --max-cycles).

    tools/layers.py [--src DIR] [--max-up N] [--max-cycles N] [--max-file-lines N] [--max-fn-lines N]

The last two hold the rooms to a size (docs/ARCHITECTURE.md: no file in src/ over 800 lines,
no function over 100): every file and function past them is listed, and the exit is 1.

A node is a top-level module (`src/engine/…` is `engine`), except the modules listed in SPLIT,
which stand on their own (`engine::recv`, below both `engine` and `tls`). An edge is one
(from, to) pair however many times it is used. Test code (`#[cfg(test)] mod tests { … }`, and
the files of `#[cfg(test)] mod NAME;`) is left out.

A method call makes no `crate::` path, so an inherent `impl Type` written outside the node that
defines `Type` would hide an edge (a protocol calling `p.drive()` on a plan type whose method
lives in `run.rs`, above it). Every such impl is reported and counted with the imports back
up: with none, each method lives where its type does, and a call to it is an edge to a node
the caller already names (or was handed a value of, from a node it names).
"""

import argparse
import os
import re
import sys

# Top to bottom; modules on one line share a layer. A module missing here is reported.
LAYERS = [
    ["main", "lib", "cmd"],
    ["run", "check", "metrics", "fleet"],
    ["protocol"],
    ["drive"],
    ["report"],
    ["engine"],
    ["tls"],
    ["proto"],
    ["props"],
    ["plan", "engine::serve_conn"],
    ["codec", "workload", "cpus", "tls::options", "requests", "proxy_header"],
    ["stats"],
    ["outcome", "recv", "interrupt", "watch", "clock", "opener", "allocator"],
]
# Modules that are nodes of their own in the graph (path under src/ without `.rs` → node):
# The server connection machine (`engine::serve_conn`) knows only the codec traits: the
# properties (`props`) run servers through it, below the protocols whose fuzz targets use them.
# TLS's options are data the plans and the protocols' registry entries name, below them; the
# TLS layer itself sits above the protocols' codecs it wraps.
SPLIT = {"tls/options": "tls::options", "engine/serve_conn": "engine::serve_conn"}


def node_of(path):
    rel = os.path.relpath(path, SRC)[:-3]
    for prefix, node in SPLIT.items():
        if rel == prefix or rel.startswith(prefix + "/"):
            return node
    return rel.split("/")[0]


def strip_tests(text):
    """The file without its `#[cfg(test)] mod tests { … }` block (by brace count)."""
    m = re.search(r"#\[cfg\(test\)\]\s*mod tests\s*\{", text)
    if not m:
        return text
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[: m.start()] + text[i:]


def test_files(path, text):
    """The files of the test modules `path` declares (`#[cfg(test)] mod NAME;`)."""
    here = os.path.dirname(path) if os.path.basename(path) in ("mod.rs", "lib.rs", "main.rs") else path[:-3]
    out = set()
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_0-9]+)\s*;", text):
        out.add(os.path.normpath(os.path.join(here, m.group(1) + ".rs")))
        out.add(os.path.normpath(os.path.join(here, m.group(1), "mod.rs")))
    return out


TYPE_DEF = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|union|type)\s+([A-Z][A-Za-z0-9_]*)", re.M)
INHERENT_IMPL = re.compile(r"^impl(?:<[^>{]*>)?\s+([A-Z][A-Za-z0-9_]*)(?:<[^{]*>)?\s*(?:where[^{]*)?\{", re.M)


def targets(text):
    """Modules named by `crate::X` paths, and by `use crate::{X, Y::…}` groups (comments left
    out: a doc link is not an import)."""
    text = re.sub(r"//[^\n]*", "", text)
    found = set()
    for m in re.finditer(r"crate::([a-z_]+)(::([a-z_]+))?", text):
        first, second = m.group(1), m.group(3)
        found.add(SPLIT.get(f"{first}/{second}", first) if second else first)
    for m in re.finditer(r"use crate::\{([^;]*)\};", text, re.S):
        for part in re.split(r",\s*", m.group(1)):
            name = re.match(r"\s*([a-z_]+)", part)
            if name:
                found.add(name.group(1))
    return found


def functions(text):
    """(name, lines) of every fn, by brace count from its signature."""
    out = []
    for m in re.finditer(r"\bfn\s+([a-z_0-9]+)[^;{]*\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out.append((m.group(1), text[m.start() : i].count("\n") + 1))
    return out


def sccs(nodes, edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def main():
    global SRC
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default=os.path.join(os.path.dirname(__file__), "..", "src"))
    ap.add_argument("--max-up", type=int)
    ap.add_argument("--max-cycles", type=int)
    ap.add_argument("--max-file-lines", type=int)
    ap.add_argument("--max-fn-lines", type=int)
    args = ap.parse_args()
    SRC = os.path.normpath(args.src)
    layer = {m: i for i, group in enumerate(LAYERS) for m in group}
    edges, nodes, sizes, fns = {}, set(), [], []
    paths = sorted(os.path.join(root, f) for root, _, files in os.walk(SRC) for f in files if f.endswith(".rs"))
    texts = {path: open(path, encoding="utf-8").read() for path in paths}
    tests = set().union(*(test_files(path, text) for path, text in texts.items()))
    defined, impls = {}, []
    for path in paths:
        text = texts[path]
        sizes.append((text.count("\n"), os.path.relpath(path, SRC)))
        if path in tests:
            continue
        code = strip_tests(text)
        for name in TYPE_DEF.findall(code):
            defined.setdefault(name, set()).add(node_of(path))
        impls.extend((name, node_of(path), os.path.relpath(path, SRC)) for name in INHERENT_IMPL.findall(code))
    for path in paths:
        if path in tests:
            continue
        if True:
            text = texts[path]
            code = strip_tests(text)
            fns.extend((n, name, os.path.relpath(path, SRC)) for name, n in functions(code))
            here = node_of(path)
            nodes.add(here)
            for t in targets(code):
                if t != here:
                    edges.setdefault(here, set()).add(t)
                    nodes.add(t)
    unknown = sorted(n for n in nodes if n not in layer)
    up = sorted((a, b) for a, bs in edges.items() for b in bs if a in layer and b in layer and layer[b] < layer[a])
    # Inherent impls away from their type's node (a type named in one node only).
    away = sorted(
        (name, node, where) for name, node, where in impls if len(defined.get(name, ())) == 1 and node not in defined[name]
    )
    cycles = sccs(nodes, edges)
    print(f"{len(nodes)} modules on {len(LAYERS)} layers, {sum(len(b) for b in edges.values())} edges")
    if unknown:
        print(f"not in a layer: {', '.join(unknown)}")
    print(f"{len(up) + len(away)} imports back up:")
    for a, b in up:
        print(f"  {a} (layer {layer[a] + 1}) -> {b} (layer {layer[b] + 1})")
    for name, node, where in away:
        print(f"  impl {name} in {where}: its type is {next(iter(defined[name]))}'s (a hidden edge)")
    print(f"{len(cycles)} cycles:")
    for c in cycles:
        print(f"  {' <-> '.join(c)}")
    sizes.sort(reverse=True)
    fns.sort(reverse=True)
    print("largest files: " + ", ".join(f"{p} {n}" for n, p in sizes[:3]))
    print("largest functions: " + ", ".join(f"{p}::{name} {n}" for n, name, p in fns[:3]))
    big_files = [(n, p) for n, p in sizes if args.max_file_lines is not None and n > args.max_file_lines]
    big_fns = [(n, name, p) for n, name, p in fns if args.max_fn_lines is not None and n > args.max_fn_lines]
    for n, p in big_files:
        print(f"  file over {args.max_file_lines} lines: {p} {n}")
    for n, name, p in big_fns:
        print(f"  function over {args.max_fn_lines} lines: {p}::{name} {n}")
    failed = (
        (args.max_up is not None and len(up) + len(away) > args.max_up)
        or (args.max_cycles is not None and len(cycles) > args.max_cycles)
        or big_files
        or big_fns
    )
    sys.exit(1 if failed or unknown else 0)


if __name__ == "__main__":
    main()
