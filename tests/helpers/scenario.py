#!/usr/bin/env python3
"""scenario: the events of a small cluster in which one of kv-conductor's
mechanisms (kvquery(1) "Classes of difference") decides a query's answer.

  scenario.py NAME DIR

writes DIR/events.jsonl (event lines as kvdecode writes them), DIR/regs.jsonl
(two engines, nodeA on 10.0.0.1 and nodeB on 10.0.0.2, block size 4, and a
memcache pool, or a Mooncake master for "signed"), DIR/query.jsonl (a /query
of the 8 tokens 1..8: two blocks) and DIR/by_hash.jsonl (the same as a
/query_by_hash).  NAME is one of:

  placeholder  nodeA offloads a placeholder (no tokens, block_size 0); the
               pool places it, nodeA frees its xpu copy
  gpu_removal  nodeA frees its xpu copy while its offload still waits
  lost         nodeB frees a block it never held while nodeA's offload waits;
               then the pool places nodeA's copy
  pool_removal the pool drops nodeA's copy while nodeB's offload waits
  stale        the same, then nodeB's offload is placed on its own node
  signed       a Mooncake batch placing nodeA's copy holds a hash >= 2^63
  walk         nodeA's copy in the pool, nodeB holds nothing of it
  gap          the pool's batch 1, then nodeA's copy in the pool (batch 2),
               its xpu copy freed, the pool's batch 3 (the test leaves the
               pool's seq 2 out)
  clean        nodeA stores, offloads, the pool places it: nothing to tell
"""

import json
import os
import sys

import xxhash

H1, H2 = 0x1111111111111111, 0x2222222222222222
SIGNED = 0x9222222222222222
TOKENS = list(range(1, 9))
BASE = 1764547200000000000


class Stream:
    def __init__(self):
        self.lines, self.seq, self.t = [], {}, 0

    def batch(self, src, events, fmt, dp=0):
        self.t += 1
        seq = self.seq.get(src, 0 if fmt == "vllm" else 1)
        self.seq[src] = seq + 1
        for e in events:
            line = {"src": src, "recv_ns": BASE + self.t * 1000000, "seq": seq, "topic": "", "replayed": False,
                    "format": fmt, "ts": (BASE + self.t * 1000000) / 1e9, "dp_rank": dp}
            line.update(e)
            self.lines.append(line)


def h(x):
    return "0x%016x" % x


def engine(node):
    return "tcp://10.0.0.%d:5557" % node


def store(hashes, medium="xpu", tokens=TOKENS):
    e = {"type": "stored", "medium": medium, "block_hashes": [h(x) for x in hashes], "parent": None}
    e.update({"token_ids": tokens, "block_size": 4} if tokens else {"token_ids": [], "block_size": 0})
    return e


OTHER = [0x4444444444444444], [101, 102, 103, 104]  # a block of other tokens


def remove(hashes, medium="xpu"):
    return {"type": "removed", "medium": medium, "block_hashes": [h(x) for x in hashes]}


def pool(kind, hashes, node):
    return {"type": kind, "medium": "cpu", "block_hashes": [h(x) for x in hashes], "backend_id": "10.0.0.%d" % node,
            "model_name": "m", "tenant_id": "default"}


def scenario(name):
    s = Stream()
    a, b, p = engine(1), engine(2), "tcp://pool:5557"
    hashes = [H1, SIGNED] if name == "signed" else [H1, H2]
    fmt = "mooncake" if name == "signed" else "memcache"
    s.batch(a, [store(hashes)], "vllm")
    if name == "placeholder":
        s.batch(a, [store(hashes, "cpu", tokens=None)], "vllm")
        s.batch(p, [pool("stored", hashes, 1)], fmt)
        s.batch(a, [remove(hashes)], "vllm")
    elif name == "gpu_removal":
        s.batch(a, [store(hashes, "cpu"), remove(hashes)], "vllm")
        s.batch(p, [pool("stored", hashes, 1)], fmt)
    elif name == "lost":
        s.batch(a, [remove(hashes), store(hashes, "cpu")], "vllm")
        s.batch(b, [remove(hashes)], "vllm")
        s.batch(p, [pool("stored", hashes, 1)], fmt)
    elif name in ("pool_removal", "stale"):
        s.batch(a, [store(hashes, "cpu")], "vllm")
        s.batch(p, [pool("stored", hashes, 1)], fmt)
        s.batch(a, [remove(hashes)], "vllm")
        s.batch(b, [store(hashes), store(hashes, "cpu")], "vllm")
        s.batch(p, [pool("removed", hashes, 1)], fmt)
        if name == "stale":
            # nodeA holds something else, so that it is a worker of the partition
            s.batch(a, [store(OTHER[0], tokens=OTHER[1])], "vllm")
            s.batch(b, [store(hashes, "cpu")], "vllm")
            s.batch(p, [pool("stored", hashes, 2)], fmt)
    elif name == "signed":
        s.batch(a, [remove(hashes), store(hashes, "cpu")], "vllm")
        s.batch(p, [pool("stored", hashes, 1)], fmt)
    elif name == "gap":
        # kvtools is given these events without the pool's second batch (seq 2)
        s.batch(p, [pool("stored", OTHER[0], 2)], fmt)
        s.batch(a, [store(hashes, "cpu")], "vllm")
        s.batch(p, [pool("stored", hashes, 1)], fmt)
        s.batch(a, [remove(hashes)], "vllm")
        s.batch(p, [pool("stored", OTHER[0], 2)], fmt)
    elif name in ("walk", "clean"):
        s.batch(a, [store(hashes, "cpu")], "vllm")
        s.batch(p, [pool("stored", hashes, 1)], fmt)
        if name == "walk":
            s.batch(a, [remove(hashes)], "vllm")
            s.batch(b, [store(OTHER[0], tokens=OTHER[1])], "vllm")
    else:
        sys.exit("scenario: no scenario %s" % name)
    return s.lines, fmt


def local(tokens):
    return xxhash.xxh3_64_intdigest(b"".join(t.to_bytes(4, "little") for t in tokens), seed=1337)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: scenario.py NAME DIR")
    name, out = sys.argv[1], sys.argv[2]
    lines, fmt = scenario(name)
    backend = "Mooncake" if fmt == "mooncake" else "Memcache"
    regs = [{"instance_id": "node%s" % c, "type": "vLLM", "dp_rank": 0, "block_size": 4, "modelname": "m",
             "tenant_id": "default", "medium_endpoints": {"npu": engine(i)}, "store_backend": backend}
            for i, c in ((1, "A"), (2, "B"))]
    regs.append({"instance_id": "pool", "type": backend, "endpoint": "tcp://pool:5557", "block_size": 4,
                 "dp_rank": 0, "store_backend": backend, "modelname": "m", "tenant_id": "default"})
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "events.jsonl"), "w") as f:
        for l in lines:
            f.write(json.dumps(l, separators=(",", ":")) + "\n")
    with open(os.path.join(out, "regs.jsonl"), "w") as f:
        for r in regs:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    with open(os.path.join(out, "query.jsonl"), "w") as f:
        f.write(json.dumps({"model": "m", "block_size": 4, "token_ids": TOKENS, "tenant_id": "default"}) + "\n")
    with open(os.path.join(out, "by_hash.jsonl"), "w") as f:
        f.write(json.dumps({"model": "m", "block_size": 4, "tenant_id": "default",
                            "block_hashes": [local(TOKENS[:4]), local(TOKENS[4:])]}) + "\n")


if __name__ == "__main__":
    main()
