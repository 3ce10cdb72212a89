#!/usr/bin/python3
"""Baseline for kvdecode: what a user would write without kvtools.

Reads a kvcap capture with Debian's python3-msgpack, decodes vLLM batches of
array events and writes the same JSON lines with the json module (both C
accelerated).  Only the vLLM array form, which is what the benchmark capture
holds; the hash rule is kvdecode's (ints as they are, bytes by their last 8).
"""
import json
import sys

import msgpack

STORED_FIELDS = ("block_hashes", "parent", "token_ids", "block_size", "lora_id", "medium")


def hash_str(h):
    if isinstance(h, bytes):
        h = int.from_bytes(h[-8:], "big")
    return "0x%016x" % (h & 0xFFFFFFFFFFFFFFFF)


def main(path):
    out = sys.stdout
    dumps = json.JSONEncoder(separators=(",", ":")).encode
    with open(path, "rb") as f:
        for rec in msgpack.Unpacker(f, raw=False, strict_map_key=False):
            if isinstance(rec, dict):
                continue
            recv_ns, src, flags, frames = rec[:4]
            topic, seq8, payload = frames
            batch = msgpack.unpackb(payload, raw=False, strict_map_key=False)
            ts, events = batch[0], batch[1]
            dp = batch[2] if len(batch) > 2 else None
            base = {"src": src, "recv_ns": recv_ns, "seq": int.from_bytes(seq8, "big"),
                    "topic": topic.decode(errors="replace"), "replayed": bool(flags & 1),
                    "format": "vllm", "ts": ts, "dp_rank": dp}
            for ev in events:
                line = dict(base)
                tag = ev[0]
                if tag == "BlockStored":
                    line["type"] = "stored"
                    line["medium"] = "xpu"
                    line["block_hashes"] = [hash_str(h) for h in ev[1]]
                    line["parent"] = hash_str(ev[2]) if ev[2] is not None else None
                    line["token_ids"] = ev[3]
                    line["block_size"] = ev[4]
                elif tag == "BlockRemoved":
                    line["type"] = "removed"
                    line["medium"] = "xpu"
                    line["block_hashes"] = [hash_str(h) for h in ev[1]]
                else:
                    line["type"] = "cleared"
                    line["medium"] = "xpu"
                    line["block_hashes"] = []
                out.write(dumps(line))
                out.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
