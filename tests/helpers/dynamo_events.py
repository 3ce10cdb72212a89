#!/usr/bin/python3
"""dynamo_events: KV events as NVIDIA Dynamo's workers send them, for the tests.

    dynamo_events.py DIR

Writes, for one scenario of stores, removals and a clear on two workers
(DP ranks 0 and 1 of one Dynamo worker, and a second worker):

  zmq.kvcap      the event plane on ZMQ, as a capture: [topic, publisher_id,
                 sequence, frame] per message, frame = version 1, payload
                 length (u32 big-endian), the envelope
  nats/NNN       the event plane on NATS core: one envelope per file
  js/NNN         the JetStream queue: one RouterEvent as JSON per file
  vllm.kvcap     the same blocks as vLLM batches with their tokens
  regs.jsonl     registrations: the vLLM endpoints and the Dynamo worker ids
                 of the same instances
  expected.jsonl what kvdecode must say of each Dynamo event
  salted.kvcap   PROMPT_A stored by three more workers under a LoRA adapter,
                 a cache namespace and both, their tokens_hash seeded as
                 Dynamo's router seeds it (see dynamo_seed)

Everything is written by hand the way Dynamo's serde derives write it
(kvdecode(1) "Dynamo's event plane" gives the mapping, read from
ai-dynamo/dynamo lib/kv-router/src/protocols.rs and
lib/runtime/src/transports/event_plane): rmp_serde::to_vec_named writes a
struct as a map of its fields in declaration order, an Option's None as nil
(no skip_serializing_if on these fields, so the keys are there), an
externally tagged enum's newtype variant as {"name": value} and a unit
variant as its name; serde_json writes the same shape as JSON.  No Dynamo
code is used or copied.
"""
import json
import os
import struct
import sys

import msgpack
import xxhash

SEED = 1337
BLOCK = 4
TOPIC = b"namespace.dynamo.component.backend.kv-events"


def local(tokens, seed=SEED):
    return xxhash.xxh3_64_intdigest(struct.pack("<%dI" % len(tokens), *tokens), seed=seed)


MASK = (1 << 64) - 1


def dynamo_seed(lora=None, namespace=None):
    """The seed of Dynamo's local block hash: 1337, plus XXH3-64 (seed 0) of
    the adapter's name, plus XXH3-64 (seed 1) of the cache namespace, modulo
    2^64; an empty name counts as none."""
    seed = SEED
    if lora:
        seed = (seed + xxhash.xxh3_64_intdigest(lora.encode(), seed=0)) & MASK
    if namespace:
        seed = (seed + xxhash.xxh3_64_intdigest(namespace.encode(), seed=1)) & MASK
    return seed


SALTS = {201: ("sql-adapter", None), 202: (None, "tenant-a"), 203: ("sql-adapter", "tenant-a")}


def blocks_of(tokens):
    return [tokens[i:i + BLOCK] for i in range(0, len(tokens), BLOCK)]


# Engine block hashes: any u64, some above 2^63 (they must survive exactly).
def engine_hash(worker, tokens_so_far):
    return xxhash.xxh64_intdigest(struct.pack("<Q", worker & 0xffffffffffffffff) + struct.pack("<%dI" % len(tokens_so_far), *tokens_so_far))


W1 = 7587888800123456789          # a Dynamo worker id past 2^53
W2 = 12
PUB = {(W1, 0): 0x1fffffffffff01, (W1, 1): 0x1fffffffffff02, (W2, 0): 77}

PROMPT_A = list(range(100, 112))          # 3 blocks
PROMPT_B = list(range(100, 104)) + list(range(500, 508))   # shares block 0 with A


def store(worker, dp, tokens, start_block):
    """The blocks [start_block:] of tokens, stored after block start_block-1."""
    bl = blocks_of(tokens)
    hashes = [engine_hash(worker ^ (dp << 60), tokens[:BLOCK * (i + 1)]) for i in range(len(bl))]
    parent = hashes[start_block - 1] if start_block else None
    return {"kind": "stored", "worker": worker, "dp": dp, "parent": parent,
            "hashes": hashes[start_block:], "locals": [local(b) for b in bl[start_block:]],
            "tokens": tokens[BLOCK * start_block:]}


def scenario():
    a1 = store(W1, 0, PROMPT_A, 0)
    b1 = store(W1, 0, PROMPT_B, 1)
    a2 = store(W1, 1, PROMPT_A, 0)
    a3 = store(W2, 0, PROMPT_A[:8], 0)
    return [
        a1, b1, a2, a3,
        {"kind": "removed", "worker": W1, "dp": 0, "hashes": [a1["hashes"][2]]},
        {"kind": "cleared", "worker": W2, "dp": 0},
    ]


def router_event(ev, event_id, tier="device"):
    """RouterEvent as serde sees it (a dict in field order)."""
    if ev["kind"] == "stored":
        data = {"stored": {"parent_hash": ev["parent"], "start_position": None,
                           "blocks": [{"block_hash": h, "tokens_hash": t, "mm_extra_info": None}
                                      for h, t in zip(ev["hashes"], ev["locals"])]}}
    elif ev["kind"] == "removed":
        data = {"removed": {"block_hashes": ev["hashes"]}}
    else:
        data = "cleared"
    return {"worker_id": ev["worker"], "storage_tier": tier, "residency_domain": "worker",
            "event": {"event_id": event_id, "data": data, "dp_rank": ev["dp"]}}


def envelope(pub, seq, ms, payload):
    return msgpack.packb({"topic": "kv-events", "publisher_id": pub, "sequence": seq,
                          "published_at": ms, "payload": payload}, use_bin_type=True)


def kvcap_header():
    return msgpack.packb({"kvcap": 1, "tool": "dynamo_events.py", "start_ns": 1}, use_bin_type=True)


def kvcap_record(recv_ns, src, frames):
    return msgpack.packb([recv_ns, src, 0, frames], use_bin_type=True)


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "nats"), exist_ok=True)
    os.makedirs(os.path.join(out, "js"), exist_ok=True)
    evs = scenario()
    seqs = {}
    zmq = [kvcap_header()]
    vllm = [kvcap_header()]
    expected = []
    vseq = {}
    for i, ev in enumerate(evs):
        key = (ev["worker"], ev["dp"])
        seq = seqs.get(key, 0)
        seqs[key] = seq + 1
        ms = 1700000000000 + i
        re = router_event(ev, 100 + i)
        payload = msgpack.packb(re, use_bin_type=True)
        env = envelope(PUB[key], seq, ms, payload)
        frame = struct.pack(">BI", 1, len(env)) + env
        src = "tcp://127.0.0.1:%d" % (6000 + (0 if ev["worker"] == W1 else 10) + ev["dp"])
        zmq.append(kvcap_record(ms * 1000000, src, [TOPIC, struct.pack(">Q", PUB[key]), struct.pack(">Q", seq), frame]))
        with open(os.path.join(out, "nats", "%03d" % i), "wb") as f:
            f.write(env)
        with open(os.path.join(out, "js", "%03d" % i), "wb") as f:
            f.write(json.dumps(re, separators=(",", ":")).encode())
        line = {"format": "dynamo", "type": ev["kind"], "worker_id": str(ev["worker"]), "dp_rank": ev["dp"],
                "event_id": 100 + i, "medium": "xpu",
                "block_hashes": ["0x%016x" % h for h in ev.get("hashes", [])]}
        if ev["kind"] == "stored":
            line["parent"] = None if ev["parent"] is None else "0x%016x" % ev["parent"]
            line["tokens_hashes"] = ["0x%016x" % t for t in ev["locals"]]
        expected.append(line)
        # the same event as a vLLM batch from the worker's engine endpoint
        vsrc = "tcp://10.0.0.%d:5557" % (1 if ev["worker"] == W1 else 2)
        vsrc = vsrc[:-1] + str(7 + ev["dp"])
        vs = vseq.get(vsrc, 0)
        vseq[vsrc] = vs + 1
        if ev["kind"] == "stored":
            vev = ["BlockStored", ev["hashes"], ev["parent"], ev["tokens"], BLOCK, None, None]
        elif ev["kind"] == "removed":
            vev = ["BlockRemoved", ev["hashes"], None]
        else:
            vev = ["AllBlocksCleared"]
        batch = msgpack.packb([ms / 1000.0, [vev], ev["dp"]], use_bin_type=True)
        vllm.append(kvcap_record(ms * 1000000, vsrc, [b"", struct.pack(">Q", vs), batch]))
    with open(os.path.join(out, "zmq.kvcap"), "wb") as f:
        f.write(b"".join(zmq))
    with open(os.path.join(out, "vllm.kvcap"), "wb") as f:
        f.write(b"".join(vllm))
    with open(os.path.join(out, "expected.jsonl"), "w") as f:
        for line in expected:
            f.write(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n")
    salted = [kvcap_header()]
    for n, (worker, (lora, ns)) in enumerate(sorted(SALTS.items())):
        ev = store(worker, 0, PROMPT_A, 0)
        ev["locals"] = [local(b, dynamo_seed(lora, ns)) for b in blocks_of(PROMPT_A)]
        env = envelope(worker, 0, 1700000001000 + n, msgpack.packb(router_event(ev, n), use_bin_type=True))
        frame = struct.pack(">BI", 1, len(env)) + env
        salted.append(kvcap_record((1700000001000 + n) * 1000000, "tcp://127.0.0.1:%d" % (6100 + n),
                                   [TOPIC, struct.pack(">Q", worker), struct.pack(">Q", 0), frame]))
    with open(os.path.join(out, "salted.kvcap"), "wb") as f:
        f.write(b"".join(salted))
    regs = []
    for (worker, dp), inst in (((W1, 0), "w1"), ((W1, 1), "w1"), ((W2, 0), "w2")):
        ep = "tcp://10.0.0.%d:%d" % (1 if worker == W1 else 2, 5557 + dp)
        regs.append({"instance_id": inst, "type": "vLLM", "modelname": "m", "block_size": BLOCK, "dp_rank": dp,
                     "medium_endpoints": {"npu": ep}, "worker_id": worker})
    with open(os.path.join(out, "regs.jsonl"), "w") as f:
        for r in regs:
            f.write(json.dumps(r) + "\n")


main()
