#!/usr/bin/python3
"""trtllm_events: KV events as TensorRT-LLM's own ZMQ publisher sends them.

    trtllm_events.py DIR PORT REPLAY_PORT

Writes, for a scenario of TensorRT-LLM KV-cache events on two attention-DP
ranks, each rank a publisher of its own on PORT + rank (replay socket
REPLAY_PORT + rank), as each rank binds the configured port plus its rank:

  tokens.kvcap     the batches of the publisher that sends token_ids
  hashes.kvcap     the same, from the later publisher that sends one
                   tokens_hash per block instead of the tokens
  expected.jsonl   what kvdecode must say of each published event (token_ids)
  expected-hashes.jsonl  the same for hashes.kvcap (tokens_hashes)
  regs.jsonl       one registration per rank: its endpoint and replay endpoint
  shared.kvcap     the batches of tokens.kvcap as the publisher read sends
                   them when one server runs every rank: one socket (PORT),
                   one seq, each batch with its event's rank
  shared-regs.jsonl  its one registration (rank 0, the server's endpoint)

The engine's events are written as TensorRT-LLM's KVCacheEventSerializer
gives them (event_id, data {type stored/removed/created}, window_size,
attention_dp_rank); each rank's publisher turns them into messages the way
tensorrt_llm/serve/kv_zmq_publisher.py does (kvdecode(1) "TensorRT-LLM"):
only events of the largest attention window once the initial created
events are over; a stored block of fewer tokens than the block size ends
its event and is never published, nor is its removal; an event with a
block of more tokens is dropped; hashes as signed i64 (two's complement);
each event alone in a batch [time, [event], attention_dp_rank] packed as
MessagePack, its keys in the order the publisher builds them; the message
[topic, seq as 8 bytes big-endian, batch], seq from 0 per publisher.  The
tokens_hash of a block is XXH3-64 of its token ids as u32 little-endian,
seeded with 1337 plus XXH3-64 of the LoRA name when there is one, computed
here by python3-xxhash.  No TensorRT-LLM code is used or copied.
"""
import json
import os
import struct
import sys

import msgpack
import xxhash

BLOCK = 4
MASK = (1 << 64) - 1
TOPIC = b""
LORA = "sql-adapter"


def signed(h):
    return h - (1 << 64) if h >= 1 << 63 else h


def engine_hash(rank, tokens):
    # any u64; most are past 2^63, so they travel as negative integers
    return xxhash.xxh64_intdigest(struct.pack("<I", rank) + struct.pack("<%dI" % len(tokens), *tokens)) | 1 << 63


def tokens_hash(tokens, lora):
    seed = 1337
    if lora:
        seed = (seed + xxhash.xxh3_64_intdigest(lora.encode(), seed=0)) & MASK
    return xxhash.xxh3_64_intdigest(struct.pack("<%dI" % len(tokens), *tokens), seed=seed)


def block(rank, prefix, tokens):
    return {"type": "stored_block", "block_hash": engine_hash(rank, prefix + tokens),
            "tokens": [{"type": "unique_token", "token_id": t, "token_extra_id": 0} for t in tokens],
            "lora_id": None, "cache_level": 0, "priority": 35, "mm_keys": []}


def stored(rank, parent, prefix, token_blocks, window, lora=None):
    bl, pre = [], list(prefix)
    for t in token_blocks:
        bl.append(block(rank, pre, t))
        pre += t
    data = {"type": "stored", "parent_hash": parent, "blocks": bl}
    if lora:
        data["lora_name"] = lora
    return {"data": data, "window_size": window, "attention_dp_rank": rank}


def native_events():
    """The engine's events of each rank, in order."""
    a = [[100, 101, 102, 103], [104, 105, 106, 107], [108, 109, 110, 111]]
    out = {}
    for rank in (0, 1):
        ev = [
            {"data": {"type": "created", "num_blocks_per_cache_level": [64, 0]}, "window_size": 32,
             "attention_dp_rank": rank},
            {"data": {"type": "created", "num_blocks_per_cache_level": [64, 0]}, "window_size": 8,
             "attention_dp_rank": rank},
        ]
        # prompt A: three full blocks and a partial one of two tokens
        sa = stored(rank, None, [], a + [[112, 113]], 32)
        ev.append(sa)
        partial = sa["data"]["blocks"][3]["block_hash"]
        # the same blocks in the sliding-window layer: not the global one
        ev.append(stored(rank, None, [], a, 8))
        if rank == 0:
            # under a LoRA adapter
            ev.append(stored(rank, None, [], [[7, 7, 7, 7], [8, 8, 8, 8]], 32, LORA))
            # A's last block and the partial one evicted: the partial one is left out
            ev.append({"data": {"type": "removed", "block_hashes": [sa["data"]["blocks"][2]["block_hash"], partial]},
                       "window_size": 32, "attention_dp_rank": rank})
        else:
            # C after A's second block
            sc = stored(rank, sa["data"]["blocks"][1]["block_hash"], a[0] + a[1], [[300, 301, 302, 303]], 32)
            ev.append(sc)
            # a block of more tokens than the block size: the event is dropped
            ev.append(stored(rank, None, [], [[1, 2, 3, 4, 5]], 32))
            ev.append({"data": {"type": "removed", "block_hashes": [sc["data"]["blocks"][0]["block_hash"]]},
                       "window_size": 32, "attention_dp_rank": rank})
        for i, e in enumerate(ev):
            e["event_id"] = i
        out[rank] = ev
    return out


class Publisher:
    """One rank's publisher: the translation and the messages it sends."""

    def __init__(self, hashes):
        self.hashes = hashes
        self.seq = 0
        self.partial = set()
        self.max_window = None
        self.initial = True

    def keep(self, ev):
        if "window_size" not in ev or self.initial:
            return True
        return ev["window_size"] == self.max_window

    def translate(self, ev):
        """The event as published, or None."""
        if not self.keep(ev):
            return None
        data = ev["data"]
        if data["type"] == "created":
            if self.initial and (self.max_window is None or ev["window_size"] > self.max_window):
                self.max_window = ev["window_size"]
            return None
        self.initial = False
        if data["type"] == "removed":
            hs = []
            for h in data["block_hashes"]:
                if signed(h) in self.partial:
                    self.partial.discard(signed(h))
                else:
                    hs.append(signed(h))
            return {"type": "BlockRemoved", "block_hashes": hs}
        lora = data.get("lora_name")
        hs, toks, locs, mm = [], [], [], []
        for b in data["blocks"]:
            t = [x["token_id"] for x in b["tokens"]]
            if len(t) > BLOCK:
                return None
            if len(t) < BLOCK:
                self.partial.add(signed(b["block_hash"]))
                break
            hs.append(signed(b["block_hash"]))
            toks += t
            locs.append(signed(tokens_hash(t, lora)))
            mm.append(None)
        out = {"type": "BlockStored", "block_hashes": hs,
               "parent_block_hash": None if data["parent_hash"] is None else signed(data["parent_hash"])}
        if self.hashes:
            out["tokens_hashes"] = locs
        else:
            out["token_ids"] = toks
        out["block_size"] = BLOCK
        if lora is not None:
            out["lora_name"] = lora
        out["block_mm_infos"] = mm
        return out

    def message(self, event, rank, ts):
        payload = msgpack.packb([ts, [event], rank], use_bin_type=True)
        frames = [TOPIC, struct.pack(">Q", self.seq), payload]
        self.seq += 1
        return frames


def hexh(h):
    return "0x%016x" % (h & MASK)


def expected_line(event, rank):
    line = {"format": "vllm", "dp_rank": rank, "medium": "xpu",
            "block_hashes": [hexh(h) for h in event["block_hashes"]]}
    if event["type"] == "BlockStored":
        line["type"] = "stored"
        p = event["parent_block_hash"]
        line["parent"] = None if p is None else hexh(p)
        line["block_size"] = BLOCK
        line["lora_name"] = event.get("lora_name")
        if "tokens_hashes" in event:
            line["tokens_hashes"] = [hexh(h) for h in event["tokens_hashes"]]
        else:
            line["token_ids"] = event["token_ids"]
    else:
        line["type"] = "removed"
    return line


def main():
    out, port, rport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    native = native_events()
    header = msgpack.packb({"kvcap": 1, "tool": "trtllm_events.py", "start_ns": 1}, use_bin_type=True)
    shared, shared_seq = [], 0
    for name, hashes in (("tokens", False), ("hashes", True)):
        pubs = {r: Publisher(hashes) for r in native}
        records, expected = [], []
        t = 1700000000000
        # the ranks' events interleave in time: rank 0's i-th, then rank 1's
        for i in range(max(len(v) for v in native.values())):
            for rank in sorted(native):
                if i >= len(native[rank]):
                    continue
                ev = pubs[rank].translate(native[rank][i])
                if ev is None:
                    continue
                t += 1
                frames = pubs[rank].message(ev, rank, t / 1000.0)
                src = "tcp://127.0.0.1:%d" % (port + rank)
                records.append(msgpack.packb([t * 1000000, src, 0, frames], use_bin_type=True))
                expected.append(expected_line(ev, rank))
                if not hashes:
                    one = [frames[0], struct.pack(">Q", shared_seq), frames[2]]
                    shared_seq += 1
                    shared.append(msgpack.packb([t * 1000000, "tcp://127.0.0.1:%d" % port, 0, one],
                                                use_bin_type=True))
        with open(os.path.join(out, name + ".kvcap"), "wb") as f:
            f.write(header + b"".join(records))
        exp = "expected.jsonl" if not hashes else "expected-hashes.jsonl"
        with open(os.path.join(out, exp), "w") as f:
            for line in expected:
                f.write(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n")
    with open(os.path.join(out, "shared.kvcap"), "wb") as f:
        f.write(header + b"".join(shared))
    with open(os.path.join(out, "shared-regs.jsonl"), "w") as f:
        f.write(json.dumps({"instance_id": "trt1", "type": "TensorRT-LLM", "modelname": "m", "block_size": BLOCK,
                            "dp_rank": 0, "medium_endpoints": {"npu": "tcp://127.0.0.1:%d" % port}}) + "\n")
    with open(os.path.join(out, "regs.jsonl"), "w") as f:
        for rank in sorted(native):
            f.write(json.dumps({"instance_id": "trt1", "type": "TensorRT-LLM", "modelname": "m", "block_size": BLOCK,
                                "dp_rank": rank,
                                "medium_endpoints": {"npu": "tcp://127.0.0.1:%d" % (port + rank)},
                                "replay_endpoint": "tcp://127.0.0.1:%d" % (rport + rank)}) + "\n")


main()
