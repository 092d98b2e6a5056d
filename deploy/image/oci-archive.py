#!/usr/bin/env python3
"""oci-archive.py: an OCI image archive of one layer from a root filesystem tarball, byte for byte
the same for the same input and SOURCE_DATE_EPOCH (Python's stdlib only).

    oci-archive.py --rootfs ROOTFS.tar --out IMAGE.oci.tar --name NAME:TAG --version V
                   --arch ARCH --revision COMMIT

The layer is ROOTFS.tar rewritten: entries in name order, mtimes clamped to SOURCE_DATE_EPOCH,
numeric owners only, no device nodes under /dev (the runtime makes /dev), no pax times. It is
gzip-compressed with no name and mtime 0 (gzip -n). Then the image config, the manifest and
index.json, the oci-layout marker, and a Docker manifest.json naming the same blobs (so that
Docker's loader, which predates OCI archives, takes it too), in a tar normalised the same way.
Prints the image digest (the manifest's) on stdout.
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time

CHUNK = 1 << 20

# What every container of the image starts with; docs/container.md says why each.
ENTRYPOINT = ["/usr/bin/mcp-execd"]
ENV = [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    # Read only when MCP_EXEC_TRANSPORT=http: in a container, loopback is unreachable from
    # outside, so listen on every address; the daemon then refuses to start without a token.
    "MCP_EXEC_ADDR=:8080",
]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def normalised(info, epoch):
    """The entry as the layer holds it: owner numbers only, mtime clamped, no pax extras."""
    info.mtime = min(int(info.mtime), epoch)
    info.uname = info.gname = ""
    # Keep extended attributes (file capabilities); drop times and names the pax header carries.
    info.pax_headers = {k: v for k, v in info.pax_headers.items() if k.startswith("SCHILY.xattr.")}
    return info


def write_layer(rootfs, out, epoch):
    """Rewrites ROOTFS into OUT (uncompressed): sorted, clamped, without /dev's nodes."""
    with tarfile.open(rootfs, "r:") as src:
        members = [m for m in src.getmembers()
                   if not (m.ischr() or m.isblk() or m.isfifo())
                   and not m.name.lstrip("./").startswith("dev/")]
        members.sort(key=lambda m: m.name.lstrip("./").encode())
        with tarfile.open(out, "w:", format=tarfile.PAX_FORMAT) as dst:
            for m in members:
                data = src.extractfile(m) if m.isreg() else None
                m = normalised(m, epoch)
                m.name = m.name.lstrip("./") or "."
                if m.name == ".":
                    continue
                dst.addfile(m, data)


def gzip_file(src, dst):
    with open(src, "rb") as f, open(dst, "wb") as raw:
        # filename "" and mtime 0: the header names no file and no time (gzip -n).
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as z:
            shutil.copyfileobj(f, z, CHUNK)


def blob_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def main():
    ap = argparse.ArgumentParser()
    for a in ("--rootfs", "--out", "--name", "--version", "--arch", "--revision"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))

    work = tempfile.mkdtemp(prefix="oci-", dir=os.path.dirname(os.path.abspath(args.out)))
    try:
        layer_tar = os.path.join(work, "layer.tar")
        layer_gz = os.path.join(work, "layer.tar.gz")
        write_layer(args.rootfs, layer_tar, epoch)
        diff_id = sha256_file(layer_tar)
        gzip_file(layer_tar, layer_gz)
        os.unlink(layer_tar)
        layer_digest = sha256_file(layer_gz)
        layer_size = os.path.getsize(layer_gz)

        labels = {
            "org.opencontainers.image.title": "mcp-execd",
            "org.opencontainers.image.description": "MCP server that runs Python in a fresh sandbox per call",
            "org.opencontainers.image.version": args.version,
            "org.opencontainers.image.revision": args.revision,
            "org.opencontainers.image.created": created,
            "org.opencontainers.image.base.name": "debian:bookworm (mmdebstrap --variant=essential)",
        }
        config = blob_json({
            "created": created,
            "architecture": args.arch,
            "os": "linux",
            "config": {
                "Entrypoint": ENTRYPOINT,
                "Env": ENV,
                "ExposedPorts": {"8080/tcp": {}},
                "Labels": labels,
                "StopSignal": "SIGTERM",
                "WorkingDir": "/",
            },
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + diff_id]},
            "history": [{"created": created, "created_by": "deploy/image/build.sh"}],
        })
        config_digest = hashlib.sha256(config).hexdigest()
        manifest = blob_json({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": "sha256:" + config_digest, "size": len(config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                        "digest": "sha256:" + layer_digest, "size": layer_size}],
            "annotations": {"org.opencontainers.image.created": created},
        })
        manifest_digest = hashlib.sha256(manifest).hexdigest()
        index = blob_json({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": "sha256:" + manifest_digest, "size": len(manifest),
                "platform": {"architecture": args.arch, "os": "linux"},
                "annotations": {"io.containerd.image.name": "localhost/" + args.name,
                                "org.opencontainers.image.ref.name": args.name.split(":", 1)[-1]},
            }],
        })
        docker_manifest = blob_json([{
            "Config": "blobs/sha256/" + config_digest,
            "RepoTags": ["localhost/" + args.name],
            "Layers": ["blobs/sha256/" + layer_digest],
        }])

        # The archive: directories first, then files, all in name order, root-owned, at the epoch.
        small = {
            "oci-layout": blob_json({"imageLayoutVersion": "1.0.0"}),
            "index.json": index,
            "manifest.json": docker_manifest,
            "blobs/sha256/" + config_digest: config,
            "blobs/sha256/" + manifest_digest: manifest,
        }
        entries = sorted(list(small) + ["blobs/sha256/" + layer_digest])
        tmp_out = args.out + ".tmp"
        with tarfile.open(tmp_out, "w:", format=tarfile.PAX_FORMAT) as t:
            for d in ("blobs", "blobs/sha256"):
                ti = tarfile.TarInfo(d)
                ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, epoch
                t.addfile(ti)
            for name in entries:
                ti = tarfile.TarInfo(name)
                ti.mode, ti.mtime = 0o644, epoch
                if name in small:
                    ti.size = len(small[name])
                    t.addfile(ti, io.BytesIO(small[name]))
                else:
                    ti.size = layer_size
                    with open(layer_gz, "rb") as f:
                        t.addfile(ti, f)
        os.replace(tmp_out, args.out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("sha256:" + manifest_digest)
    print("layer %d bytes compressed (sha256:%s)" % (layer_size, layer_digest), file=sys.stderr)


if __name__ == "__main__":
    main()
