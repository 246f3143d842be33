#!/usr/bin/env python3
"""Build a docker-archive image tarball (importable by `ctr images import`)
from local files, no daemon, no registry.
usage: mkimage.py OUT.tar NAME:TAG ENTRYPOINT_JSON SRC:DST[:mode] ... [--link DST=TARGET ...]"""
import hashlib, io, json, sys, tarfile, time

def main():
    out, ref, entry = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    files, links = [], []
    args = sys.argv[4:]
    i = 0
    while i < len(args):
        if args[i] == "--link":
            dst, tgt = args[i + 1].split("=", 1); links.append((dst, tgt)); i += 2
        else:
            files.append(args[i].split(":")); i += 1
    # layer tar
    lb = io.BytesIO()
    with tarfile.open(fileobj=lb, mode="w", format=tarfile.PAX_FORMAT) as lt:
        dirs = set()
        def adddir(p):
            parts = p.strip("/").split("/")[:-1]
            for k in range(1, len(parts) + 1):
                d = "/".join(parts[:k])
                if d not in dirs:
                    dirs.add(d); ti = tarfile.TarInfo(d); ti.type = tarfile.DIRTYPE; ti.mode = 0o755; ti.mtime = 0; lt.addfile(ti)
        for f in files:
            src, dst = f[0], f[1]; mode = int(f[2], 8) if len(f) > 2 else 0o755
            adddir(dst)
            data = open(src, "rb").read()
            ti = tarfile.TarInfo(dst.strip("/")); ti.size = len(data); ti.mode = mode; ti.mtime = 0
            lt.addfile(ti, io.BytesIO(data))
        for dst, tgt in links:
            adddir(dst)
            ti = tarfile.TarInfo(dst.strip("/")); ti.type = tarfile.SYMTYPE; ti.linkname = tgt; ti.mtime = 0; lt.addfile(ti)
        for d in ("tmp", "etc", "proc", "sys", "dev"):
            if d not in dirs:
                ti = tarfile.TarInfo(d); ti.type = tarfile.DIRTYPE; ti.mode = 0o1777 if d == "tmp" else 0o755; ti.mtime = 0; lt.addfile(ti)
    layer = lb.getvalue()
    diffid = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = {
        "architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
        "config": {"Entrypoint": entry, "Env": ["PATH=/usr/local/bin:/usr/bin:/bin"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [diffid]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "mkimage.py"}],
    }
    cb = json.dumps(config).encode()
    cname = hashlib.sha256(cb).hexdigest() + ".json"
    manifest = [{"Config": cname, "RepoTags": [ref], "Layers": ["layer.tar"]}]
    with tarfile.open(out, "w") as t:
        for name, data in ((cname, cb), ("layer.tar", layer), ("manifest.json", json.dumps(manifest).encode())):
            ti = tarfile.TarInfo(name); ti.size = len(data); ti.mode = 0o644; ti.mtime = 0
            t.addfile(ti, io.BytesIO(data))
    print(out, ref, diffid)

main()
