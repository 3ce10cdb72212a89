#!/usr/bin/python3
"""Baseline for kvmatch: the same matching rules in plain Python.

Reads a kvcap capture of vLLM array events and memcache pool events (what
`kvgen --pool memcache` writes) with python3-msgpack, hashes blocks with
python3-xxhash (XXH3-64, seed 1337, local hash and prefix chain), and keeps
the index in dicts: engine hash -> chain, chain -> {worker: media}, the
offload cache and the pending pool (IpOnly targets from backend_id).
The rules are kvmatch(1) "Engine events", "Pool events" as lib/index/match.c applies them, without the TTLs: in
kvgen's traffic the pool's events come 1 ms after the engine's, so nothing
waits long enough to expire.  Prints the block operations it applied (for
the benchmark's rate), then the blocks and (block, worker) pairs of the
index, which must be kvmatch's.
"""
import struct
import sys

import msgpack
import xxhash

ROOT = 1337
XPU, CPU, DISK = 1, 2, 4
MEDIA = {"GPU": XPU, "CPU": CPU, "DISK": DISK, "cpu": CPU, "disk": DISK}


def main(capture, regs):
    import json
    worker_of = {}                  # engine endpoint -> worker
    on_host = {}                    # ip -> [workers]
    for line in open(regs):
        r = json.loads(line)
        if "medium_endpoints" in r:
            url = r["medium_endpoints"]["npu"]
            w = (r["instance_id"], r["dp_rank"])
            worker_of[url] = w
            on_host.setdefault(url[6:].rsplit(":", 1)[0], []).append(w)
    chain_of = {}                   # engine hash -> chain
    index = {}                      # chain -> {worker: media bits}
    offload = {}                    # engine hash -> chain
    pending = {}                    # engine hash -> [(worker, medium)]
    ops = 0

    def hold(chain, w, m):
        holders = index.setdefault(chain, {})
        holders[w] = holders.get(w, 0) | m

    def release(chain, w, m):
        holders = index.get(chain)
        if holders and w in holders:
            holders[w] &= ~m
            if not holders[w]:
                del holders[w]
                if not holders:
                    del index[chain]

    with open(capture, "rb") as f:
        for rec in msgpack.Unpacker(f, raw=False, strict_map_key=False):
            if isinstance(rec, dict):
                continue
            src, frames = rec[1], rec[3]
            batch = msgpack.unpackb(frames[2], raw=False, strict_map_key=False)
            if isinstance(batch, dict):                  # memcache pool batch
                for ev in batch["events"]:
                    targets = on_host.get(ev.get("backend_id"), [])
                    m = MEDIA.get(ev.get("medium"), CPU)
                    for h in ev.get("seq_hashes") or []:
                        ops += len(targets)
                        if ev["event_type"] == "stored":
                            c = offload.pop(h, None)
                            if c is None:
                                c = chain_of.get(h)
                            if c is None:
                                pending.setdefault(h, []).extend((w, m) for w in targets)
                                continue
                            for w in targets:
                                hold(c, w, m)
                        elif ev["event_type"] == "removed":
                            # the targets stop holding it; their entries waiting for it go
                            offload.pop(h, None)
                            if h in pending:
                                pending[h] = [(tw, tm) for (tw, tm) in pending[h] if tw not in targets or tm != m]
                                if not pending[h]:
                                    del pending[h]
                            c = chain_of.get(h)
                            for w in targets:
                                if c is not None:
                                    release(c, w, m)
                continue
            w = worker_of[src]
            for ev in batch[1]:
                tag, hashes = ev[0], ev[1]
                m = MEDIA.get(ev[6] if tag == "BlockStored" else ev[2], XPU)
                if tag == "BlockStored":
                    tokens, bs = ev[3], ev[4]
                    if not tokens:                       # offload placeholder
                        for h in hashes:
                            c = chain_of.get(h)
                            if c is None:
                                continue
                            # matched with the pool entries waiting for it, else cached
                            # until the pool's event comes (kvmatch(1) "Engine events")
                            waiting = pending.pop(h, None)
                            if waiting:
                                for (tw, tm) in waiting:
                                    hold(c, tw, tm)
                            else:
                                offload[h] = c
                        continue
                    parent = ROOT if ev[2] is None else chain_of.get(ev[2])
                    if parent is None:
                        continue
                    for i, h in enumerate(hashes):
                        block = tokens[i * bs:(i + 1) * bs]
                        local = xxhash.xxh3_64_intdigest(struct.pack("<%dI" % len(block), *block), seed=ROOT)
                        parent = xxhash.xxh3_64_intdigest(struct.pack("<Q", local), seed=parent)
                        chain_of[h] = parent
                        hold(parent, w, m)
                        ops += 1
                elif tag == "BlockRemoved":
                    for h in hashes:
                        ops += 1
                        # an offload dropped before any pool confirmed it never reached a tier
                        if m != XPU and offload.pop(h, None) is not None:
                            continue
                        c = chain_of.get(h)
                        if c is not None:
                            release(c, w, m)
    print(ops, len(index), sum(len(holders) for holders in index.values()))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
