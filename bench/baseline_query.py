#!/usr/bin/python3
"""Baseline for kvquery: the same walks in plain Python.

Loads the index from `kvmatch --dump` JSON lines (chain -> {worker: media}),
then answers /query lines: json, python3-xxhash for local hashes and prefix
chains, dict lookups per block, kv-conductor's three walks, and the answer
written with json.  Prints, on stderr, the whole-program rate and the
median and 99th percentile of answering alone (hashing and walks).
"""
import json
import struct
import sys
import time

import xxhash

ROOT = 1337
XPU, CPU, DISK = 1, 2, 4
BIT = {"xpu": XPU, "cpu": CPU, "disk": DISK}


def load(dump):
    index = {}
    for line in open(dump):
        r = json.loads(line)
        if r.get("kind") != "block":
            continue
        index[int(r["chain"], 16)] = {(h["instance_id"], h["dp_rank"]): sum(BIT[m] for m in h["media"])
                                      for h in r["holders"]}
    return index


def walks(index, chains):
    holders0 = index.get(chains[0]) if chains else None
    if not holders0:
        return {}
    answer = {}
    for w in holders0:
        npu = 0
        while npu < len(chains) and index.get(chains[npu], {}).get(w, 0) & XPU:
            npu += 1

        def run(start, bit):
            i = start
            while i < len(chains) and index.get(chains[i], {}).get(w, 0) & bit:
                i += 1
            return i
        cpu = max(run(0, CPU), run(npu, CPU))
        base = max(npu, cpu)
        disk = max(run(0, DISK), run(base, DISK))
        counts = (npu, max(0, cpu - npu), max(0, disk - base))
        if sum(counts):
            answer[w] = counts
    return answer


def main(dump, queries):
    index = load(dump)
    out = sys.stdout
    times = []
    start = time.perf_counter()
    n = 0
    for line in open(queries):
        q = json.loads(line)
        t0 = time.perf_counter()
        bs = q["block_size"]
        if "block_hashes" in q:
            locals_ = q["block_hashes"]
        else:
            toks = q["token_ids"]
            locals_ = [xxhash.xxh3_64_intdigest(struct.pack("<%dI" % len(toks[i:i + bs]), *toks[i:i + bs]), seed=ROOT)
                       for i in range(0, len(toks), bs)]
        chains, c = [], ROOT
        for loc in locals_:
            c = xxhash.xxh3_64_intdigest(struct.pack("<Q", loc), seed=c)
            chains.append(c)
        hits = walks(index, chains)
        times.append(time.perf_counter() - t0)
        inst = {}
        for (iid, dp), (npu, cpu, disk) in sorted(hits.items()):
            e = inst.setdefault(iid, {"longest_matched": 0, "DP": {}})
            tokens = (npu + cpu + disk) * bs
            e["longest_matched"] = max(e["longest_matched"], tokens)
            e["DP"][str(dp)] = {"matched_tokens": tokens, "npu_blocks": npu, "cpu_blocks": cpu, "disk_blocks": disk}
        out.write(json.dumps({q.get("tenant_id", "default"): inst}, separators=(",", ":")))
        out.write("\n")
        n += 1
    total = time.perf_counter() - start
    times.sort()
    print("%d %.6f %.6f %.6f" % (n, total, times[len(times) // 2], times[min(len(times) - 1, len(times) * 99 // 100)]),
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
