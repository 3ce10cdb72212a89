#!/usr/bin/python3
"""Baseline for kvquery: the same walks in plain Python.

Loads the index from `kvmatch --dump` JSON lines (chain -> {worker: media}),
then answers /query lines (token_ids: json, python3-xxhash for local hashes)
and /query_by_hash lines (block_hashes, the local hashes as they are): prefix
chains with python3-xxhash, dict lookups per block, kv-conductor's three
walks, and the answer written with json.

    baseline_query.py [--repeat N] DUMP QUERIES ANSWERS [QUERIES ANSWERS]...

Loads the index once, then answers each QUERIES file into its ANSWERS file N
times (default 1): the best of N, as the benchmark takes for kvquery, since
loading a large dump takes far longer than answering.  Prints one line per
QUERIES file on stdout: queries, seconds of the best pass (reading, answering
and writing; the load excluded), and that pass's median and 99th percentile
of answering alone (hashing and walks), in seconds.
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


def answer_all(index, queries, answers):
    """One pass over a query file: (queries, seconds, answering times)."""
    times = []
    start = time.perf_counter()
    n = 0
    out = open(answers, "w")
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
            e["DP"][str(dp)] = {"matched_tokens": tokens, "npu_blocks": npu, "cpu_blocks": cpu, "disk_blocks": disk,
                                "cpu_local_blocks": cpu, "cpu_remote_blocks": 0}
        # kv-conductor's serialisation: serde_json through a Value, keys sorted
        out.write(json.dumps({q.get("tenant_id", "default"): inst}, separators=(",", ":"), sort_keys=True))
        out.write("\n")
        n += 1
    out.close()
    return n, time.perf_counter() - start, times


def main(argv):
    repeat = 1
    if argv[:1] == ["--repeat"]:
        repeat, argv = int(argv[1]), argv[2:]
    if len(argv) < 3 or len(argv) % 2 == 0:
        sys.exit("usage: baseline_query.py [--repeat N] DUMP QUERIES ANSWERS [QUERIES ANSWERS]...")
    index = load(argv[0])
    for queries, answers in zip(argv[1::2], argv[2::2]):
        n, total, times = min((answer_all(index, queries, answers) for _ in range(repeat)), key=lambda r: r[1])
        times.sort()
        print("%d %.6f %.6f %.6f" % (n, total, times[len(times) // 2],
                                     times[min(len(times) - 1, len(times) * 99 // 100)]))


if __name__ == "__main__":
    main(sys.argv[1:])
