#!/usr/bin/env python3
"""regcheck: is every line of the files a body kv-conductor's POST /register accepts?

The field rules of kv-conductor's RegisterRequest (motor/kv_conductor/src/protocols.rs),
as serde applies them: instance_id, type, modelname (strings), block_size and dp_rank
(u32) are required; medium_endpoints ({medium: url}), endpoint, store_backend,
replay_endpoint, tenant_id and node_id are optional with their types; a body needs a
non-empty medium_endpoints or an endpoint to subscribe to.  Mooncake RFC #1403's own
fields (lora_name, additionalsalt) are strings when present.  Prints FILE:LINE: why for
each line kv-conductor would answer 422, exits 1 if there is any.
"""
import json
import sys

U32 = (0, 2**32 - 1)
REQUIRED = {"instance_id": str, "type": str, "modelname": str, "block_size": int, "dp_rank": int}
OPTIONAL = {"medium_endpoints": dict, "endpoint": (str, type(None)), "store_backend": str,
            "replay_endpoint": (str, type(None)), "tenant_id": str, "node_id": (str, type(None)),
            "lora_name": (str, type(None)), "additionalsalt": (str, type(None))}


def problem(body):
    if not isinstance(body, dict):
        return "not a JSON object"
    for key, want in REQUIRED.items():
        if key not in body:
            return "missing field `%s`" % key
        if not isinstance(body[key], want) or isinstance(body[key], bool):
            return "%s: invalid type" % key
    for key in ("block_size", "dp_rank"):
        if not U32[0] <= body[key] <= U32[1]:
            return "%s: not a u32" % key
    for key, want in OPTIONAL.items():
        if key in body and not isinstance(body[key], want):
            return "%s: invalid type" % key
    eps = body.get("medium_endpoints", {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in eps.items()):
        return "medium_endpoints: invalid type"
    if not eps and not body.get("endpoint"):
        return "neither medium_endpoints nor endpoint"
    return None


bad = 0
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                why = problem(json.loads(raw.decode("utf-8")))
            except UnicodeDecodeError:
                why = "not UTF-8"
            except ValueError as e:
                why = "not JSON: %s" % e
            if why:
                print("%s:%d: %s" % (path, n, why))
                bad += 1
sys.exit(1 if bad else 0)
