#!/usr/bin/env python3
"""routerd: a KV-cache router for the tests of kvquery --against.

An index of its own, fed by event JSON lines (kvdecode's), answering
kv-conductor's POST /query and /query_by_hash (or, with --api rfc, Mooncake
RFC #1403's) in the exact serialisation those servers write (serde_json
through a Value: compact, keys sorted).  By default it applies the events as
kvmatch(1) does, so that its answers agree with kvquery's; each switch below
turns on one of kv-conductor's own mechanisms (motor/kv_conductor at 5246d49;
kvquery(1) "Classes of difference"), so that the differences it makes come
from the events, never from a table of answers:

  --placeholder-key      1: an offload placeholder (no tokens, block_size 0)
                         keys the pool's copy by the engine's hash
  --swallow-gpu-removal  2: an xpu removal that meets an offload not yet
                         confirmed takes it and is not applied
  --walk own|shared      3: lower tiers walked per worker (kv-conductor
                         0b72b6f, DpBlocks of 4 fields) or ownership-blind
                         (5246d49, with cpu_local_blocks/cpu_remote_blocks)
  --lose-confirmation    4: any removal takes a waiting offload, and a pool
                         store resolves only from an offload or content
                         kept (kv-conductor's ingest_pool_blocks), else waits
  --swallow-pool-removal 5, 6: a pool removal that meets a waiting offload
                         takes it, and the first worker it names keeps its copy
  --signed-mooncake      7: a Mooncake batch holding a hash >= 2^63 is dropped
  --by-hash-blocks       8: /query_by_hash counts matched_tokens in blocks
  --conductor            all of these, --walk shared

and, for the failures kvquery must report: --lag SECS (an event is applied
SECS after its recv_ns), --limit N (only the first N event lines), --drop
SRC:SEQ (ignore that record's events), --status CODE, --garbage, --cut (a
body cut inside its JSON), --truncate (fewer bytes than Content-Length),
--slow SECS; each of the last five also for one request, by a path before
the route: /status/404/query, /slow/3/query, /garbage/query, /cut/query,
/truncate/query.  GET /stats answers {"requests":N,"max_in_flight":M}: the
POSTs served, and the most it was serving at once.  --follow keeps reading
the events file as it grows.  It
listens on 127.0.0.1:PORT, writes PORT to --ready FILE once listening, and
exits after --lifetime seconds (default 120).
"""

import argparse
import array
import collections
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import xxhash

ROOT = 1337
SEED = 1337
MASK = (1 << 64) - 1
PENDING_TTL = 60 * 10**9
OFFLOAD_TTL = 600 * 10**9


def token_bytes(tokens):
    """Token ids as u32 little-endian, as kv-conductor hashes them (as u32)."""
    try:
        b = array.array("I", tokens)
    except OverflowError:
        b = array.array("I", [t & 0xFFFFFFFF for t in tokens])
    if sys.byteorder != "little":
        b.byteswap()
    return b.tobytes()


def local_hashes(tokens, bs, complete_only=False):
    """The local hash of each block of bs tokens (a trailing partial one too)."""
    b, step = token_bytes(tokens), 4 * bs
    end = len(b) - len(b) % step if complete_only else len(b)
    return [xxhash.xxh3_64_intdigest(b[i:i + step], seed=SEED) for i in range(0, end, step)]


def local_hash(tokens):
    return xxhash.xxh3_64_intdigest(token_bytes(tokens), seed=SEED)


def chain_next(parent, local):
    return xxhash.xxh3_64_intdigest(local.to_bytes(8, "little"), seed=parent)


def host_of(url):
    m = re.match(r"^[a-z]+://(\[[^\]]*\]|[^:/]*)(?::(\d+))?", url)
    if not m:
        return None, None
    h = m.group(1)
    if h.startswith("["):
        h = h[1:-1]
    return h, int(m.group(2)) if m.group(2) else None


def medium_of(m):
    return m if m in ("xpu", "cpu", "disk") else "xpu"


class Index:
    def __init__(self, args, regs):
        self.a = args
        self.lock = threading.Lock()
        self.by_src = {}        # engine endpoint -> (instance, dp)
        self.host = {}          # (instance, dp) -> host
        self.pool_reg = {}      # pool endpoint -> (model, tenant)
        self.part_of = {}       # worker -> (model, tenant)
        self.bs = {}            # (model, tenant) -> block size
        self.parts = set()
        self.pools = set()      # pool holders (backend ids)
        for r in regs:
            model, tenant = r.get("modelname", "default"), r.get("tenant_id", "default")
            self.parts.add((model, tenant))
            if r.get("block_size"):
                self.bs[(model, tenant)] = r["block_size"]
            eps = r.get("medium_endpoints") or {}
            if eps:
                w = (r["instance_id"], int(r.get("dp_rank", 0)))
                for med, url in eps.items():
                    self.by_src[url] = w
                    if med.lower() in ("npu", "gpu", "xpu", "hbm", "device"):
                        self.host[w] = host_of(url)[0]
                self.part_of[w] = (model, tenant)
            elif r.get("endpoint"):
                self.pool_reg[r["endpoint"]] = (model, tenant)
        self.registered = bool(regs)
        self.p = {}             # partition -> state
        self.group = None       # (src, seq) of the Mooncake batch being read
        self.group_lines = []

    def part(self, key):
        if key not in self.p:
            self.p[key] = {
                "ehash": {},      # engine hash -> chain
                "held": {},       # chain -> {worker: set(media)}
                "xpu_of": {},     # worker -> set(chains) in xpu
                "media_of": {},   # (worker, medium) -> set(chains)
                "offload": {},    # ehash -> [chain, time]: waiting for its pool
                "content": {},    # ehash -> chain: content kept after a placement
                "pending": {},    # ehash -> [(targets, medium, time)]: pool stores waiting
                "tier": {},       # ehash -> {(worker, medium): chain}: lower-tier copies
            }
            self.parts.add(key)
        return self.p[key]

    # ---- who ----
    def engine_worker(self, e):
        dp = e.get("dp_rank") or 0
        if e["src"] in self.by_src:
            return self.by_src[e["src"]]
        h, port = host_of(e["src"])
        w = ("%s:%d" % (h, port - dp) if port is not None and port - dp >= 0 else e["src"], dp)
        if w not in self.host:
            self.host[w] = h
            self.part_of[w] = ("default", "default")
        return w

    def pool_targets(self, e):
        b = e.get("backend_id")
        if b is None:
            return []
        ts = sorted(w for w, h in self.host.items() if h == b)
        if ts:
            return ts
        self.pools.add(b)
        return [(b, -1)]

    def pool_part(self, e):
        reg = self.pool_reg.get(e["src"])
        model = e.get("model_name") or (reg[0] if reg else "default")
        tenant = e.get("tenant_id") or (reg[1] if reg else "default")
        return (model, tenant)

    # ---- holding ----
    def hold(self, s, chain, w, m):
        s["held"].setdefault(chain, {}).setdefault(w, set()).add(m)
        s["media_of"].setdefault((w, m), set()).add(chain)

    def drop(self, s, chain, w, m):
        h = s["held"].get(chain)
        if h and w in h:
            h[w].discard(m)
            if not h[w]:
                del h[w]
            if not h:
                del s["held"][chain]
        s["media_of"].get((w, m), set()).discard(chain)

    def expire(self, s, now):
        # as event time passes, a second at a time
        if now - s.get("swept", 0) < 10**9:
            return
        s["swept"] = now
        for h in list(s["pending"]):
            s["pending"][h] = [p for p in s["pending"][h] if now - p[2] < PENDING_TTL]
            if not s["pending"][h]:
                del s["pending"][h]
        for h in list(s["offload"]):
            if now - s["offload"][h][1] >= OFFLOAD_TTL:
                del s["offload"][h]

    # ---- events ----
    def apply_line(self, line):
        try:
            e = json.loads(line)
        except ValueError:
            return
        if not isinstance(e, dict) or e.get("type") not in ("stored", "removed", "cleared"):
            return
        if self.a.drop and "%s:%s" % (e.get("src"), e.get("seq")) in self.a.drop:
            return
        key = (e.get("src"), e.get("seq"), e.get("recv_ns"))
        if e.get("format") == "mooncake" and self.a.signed_mooncake:
            # kv-conductor decodes a Mooncake batch whole, its hashes as i64
            # refused when negative: one such hash loses every event of it
            if self.group != key:
                self.flush_group()
                self.group = key
            self.group_lines.append(e)
            return
        self.flush_group()
        self.apply(e)

    def flush_group(self):
        lines, self.group_lines, self.group = self.group_lines, [], None
        if any(int(h, 16) >> 63 for e in lines for h in e.get("block_hashes", [])):
            return
        for e in lines:
            self.apply(e)

    def apply(self, e):
        now = e["recv_ns"]
        hashes = [int(h, 16) for h in e.get("block_hashes", [])]
        if e["format"] == "vllm":
            w = self.engine_worker(e)
            s = self.part(self.part_of.get(w, ("default", "default")))
            self.expire(s, now)
            m = medium_of(e.get("medium"))
            if e["type"] == "stored":
                if m == "xpu":
                    self.engine_store(s, w, e, hashes)
                else:
                    self.offload(s, e, hashes, now)
            elif e["type"] == "removed":
                for h in hashes:
                    self.engine_remove(s, w, m, h, now)
            else:
                for c in list(s["xpu_of"].get(w, ())):
                    self.drop(s, c, w, "xpu")
                s["xpu_of"][w] = set()
        else:
            s = self.part(self.pool_part(e))
            self.expire(s, now)
            ts = self.pool_targets(e)
            m = e.get("medium") if e.get("medium") in ("cpu", "disk") else "cpu"
            if e["type"] == "stored":
                for h in hashes:
                    self.pool_store(s, ts, m, h, now)
            elif e["type"] == "removed":
                for h in hashes:
                    self.pool_remove(s, ts, m, h, now)
            else:
                for t in ts:
                    for c in list(s["media_of"].get((t, m), ())):
                        self.drop(s, c, t, m)
                    for copies in s["tier"].values():
                        copies.pop((t, m), None)
                for h in list(s["pending"]):
                    s["pending"][h] = [p for p in s["pending"][h] if not set(p[0]) & set(ts)]

    def engine_store(self, s, w, e, hashes):
        toks = e.get("token_ids") or []
        if not toks:
            return
        bs = e.get("block_size") or len(toks) // max(1, len(hashes))
        par = e.get("parent")
        parent = ROOT if par is None else s["ehash"].get(int(par, 16))
        if parent is None:
            return
        for h, local in zip(hashes, local_hashes(toks, bs)):
            parent = chain_next(parent, local)
            s["ehash"][h] = parent
            self.hold(s, parent, w, "xpu")
            s["xpu_of"].setdefault(w, set()).add(parent)

    def offload(self, s, e, hashes, now):
        toks = e.get("token_ids") or []
        bs = e.get("block_size") or 0
        par = e.get("parent")
        parent = ROOT if par is None else s["ehash"].get(int(par, 16))
        for i, h in enumerate(hashes):
            if toks and bs:
                chain = chain_next(parent, local_hash(toks[i * bs:(i + 1) * bs])) if parent is not None else None
            elif self.a.placeholder_key:
                # kv-conductor keys the block by the engine hash as its tokens' hash
                chain = ("engine-keyed", h)
            else:
                chain = s["ehash"].get(h)
            parent = chain if isinstance(chain, int) else None
            if chain is None:
                continue
            waiting = s["pending"].pop(h, None)
            if waiting:
                for ts, m, _ in waiting:
                    for t in ts:
                        self.place(s, h, chain, t, m)
                s["content"][h] = chain
                s["offload"].pop(h, None)
            else:
                s["offload"][h] = [chain, now]
                s["content"].pop(h, None)

    def conductor_matching(self):
        """kv-conductor's two-phase matching (evict_pending_blocks,
        ingest_pool_blocks), which its removal mechanisms come with."""
        a = self.a
        return a.swallow_gpu_removal or a.lose_confirmation or a.swallow_pool_removal

    def take_offload(self, s, h, now):
        """A removal meets an offload still waiting for its pool: kv-conductor
        takes it (and the content), and does not apply the removal."""
        o = s["offload"].get(h)
        if not self.conductor_matching() or o is None or now - o[1] >= OFFLOAD_TTL:
            return False
        del s["offload"][h]
        s["content"].pop(h, None)
        return True

    def place(self, s, h, chain, t, m):
        self.hold(s, chain, t, m)
        s["tier"].setdefault(h, {})[(t, m)] = chain

    def engine_remove(self, s, w, m, h, now):
        if self.take_offload(s, h, now) and self.a.swallow_gpu_removal:
            return
        chain = s["ehash"].get(h)
        if chain is not None:
            self.drop(s, chain, w, m)
            if m == "xpu":
                s["xpu_of"].get(w, set()).discard(chain)

    def resolve_pool(self, s, h, now):
        o = s["offload"].get(h)
        if o is not None and now - o[1] >= OFFLOAD_TTL:
            o = s["offload"].pop(h)
            o = None
        if not self.conductor_matching():
            # kvmatch: an offload's chain, or the engine hash's
            return o[0] if o is not None else s["ehash"].get(h)
        if o is not None:
            del s["offload"][h]
            s["content"][h] = o[0]
            return o[0]
        if h in s["content"]:
            return s["content"][h]
        copies = s["tier"].get(h)
        return next(iter(copies.values())) if copies else None

    def pool_store(self, s, ts, m, h, now):
        chain = self.resolve_pool(s, h, now)
        if chain is None:
            s["pending"].setdefault(h, []).append((ts, m, now))
            return
        for t in ts:
            self.place(s, h, chain, t, m)

    def pool_remove(self, s, ts, m, h, now):
        keep_first = self.take_offload(s, h, now) and self.a.swallow_pool_removal
        copies = s["tier"].get(h, {})
        for i, t in enumerate(ts):
            if keep_first and i == 0:
                continue
            chain = copies.pop((t, m), None)
            if chain is None:
                chain = s["ehash"].get(h)
            if chain is not None:
                self.drop(s, chain, t, m)
        if h in s["pending"]:
            s["pending"][h] = [p for p in s["pending"][h] if not set(p[0]) & set(ts)]
            if not s["pending"][h]:
                del s["pending"][h]

    # ---- answers ----
    def answer(self, key, chains, bs, tokens_per_block):
        s = self.p.get(key)
        shared = self.a.walk == "shared"
        workers = set()
        if s:
            for hs in s["held"].values():
                workers.update(w for w in hs if w[1] >= 0)
        out = {}
        for w in sorted(workers):
            held = lambda c, m, own=True: s["held"].get(c, {}).get(w, set()).__contains__(m) if own else \
                any(m in ms for ms in s["held"].get(c, {}).values())

            def walk(start, m, own):
                i = start
                while i < len(chains) and held(chains[i], m, own):
                    i += 1
                return i

            npu = walk(0, "xpu", True)
            cpu_end = max(walk(0, "cpu", not shared), walk(npu, "cpu", not shared))
            up = max(npu, cpu_end)
            disk_end = max(walk(0, "disk", not shared), walk(up, "disk", not shared))
            cpu = max(0, cpu_end - npu)
            disk = max(0, disk_end - up)
            if npu + cpu + disk == 0:
                continue
            local = sum(1 for i in range(npu, npu + cpu) if held(chains[i], "cpu", True))
            out.setdefault(w[0], {})[w[1]] = (npu, cpu, disk, local)
        return out

    def conductor(self, key, chains, bs, by_hash):
        res = {}
        unit = 1 if by_hash and self.a.by_hash_blocks else bs
        for inst, ranks in self.answer(key, chains, bs, unit).items():
            dp = {}
            for r, (npu, cpu, disk, local) in ranks.items():
                d = {"npu_blocks": npu, "cpu_blocks": cpu, "disk_blocks": disk,
                     "matched_tokens": (npu + cpu + disk) * unit}
                if self.a.walk == "shared":
                    d["cpu_local_blocks"] = local
                    d["cpu_remote_blocks"] = cpu - local
                dp[str(r)] = d
            res[inst] = {"DP": dp, "longest_matched": max(v["matched_tokens"] for v in dp.values())}
        return res

    def rfc(self, key, chains, bs, instance):
        res = {}
        for inst, ranks in self.answer(key, chains, bs, bs).items():
            if instance and inst != instance:
                continue
            g = max(n for n, c, d, l in ranks.values()) * bs
            c = max(n + c for n, c, d, l in ranks.values()) * bs
            d = max(n + c + d for n, c, d, l in ranks.values()) * bs
            res[inst] = {"GPU": g, "CPU": c, "DISK": d, "longest_matched": d,
                         "DP": {str(r): (n + cc + dd) * bs for r, (n, cc, dd, l) in ranks.items()}}
        return res


def token_chains(tokens, bs, complete_only):
    out, parent = [], ROOT
    for local in local_hashes(tokens, bs, complete_only):
        parent = chain_next(parent, local)
        out.append(parent)
    return out


def compact(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send(self, status, body, ctype="application/json"):
        a = self.mode
        if a.truncate:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body) + 100))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if a.cut:
            body = body[: max(1, len(body) // 2)]
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.mode = self.server.args
        if self.path != "/stats":
            return self.send(404, compact({"error": "not found"}))
        srv = self.server
        with srv.stats_lock:
            body = compact({"requests": srv.requests, "max_in_flight": srv.max_in_flight})
        self.send(200, body)

    def do_POST(self):
        srv = self.server
        with srv.stats_lock:
            srv.requests += 1
            srv.in_flight += 1
            srv.max_in_flight = max(srv.max_in_flight, srv.in_flight)
        try:
            self.serve_post()
        finally:
            with srv.stats_lock:
                srv.in_flight -= 1

    def serve_post(self):
        a = argparse.Namespace(**vars(self.server.args))
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        # a failure asked for in the path: /status/N/..., /slow/SECS/..., /garbage/..., /cut/..., /truncate/...
        parts = self.path.split("/")
        while len(parts) > 2 and parts[1] in ("status", "slow", "garbage", "cut", "truncate"):
            if parts[1] in ("status", "slow"):
                setattr(a, parts[1], type(getattr(a, parts[1]))(parts[2]))
                del parts[1:3]
            else:
                setattr(a, parts[1], True)
                del parts[1]
        self.path = "/".join(parts)
        self.mode = a
        if a.slow:
            time.sleep(a.slow)
        if a.status:
            return self.send(a.status, compact({"error": "routerd told to answer %d" % a.status}))
        if a.garbage:
            return self.send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
        try:
            q = json.loads(raw)
            model, bs = q["model"], int(q["block_size"])
            tenant = q.get("tenant_id", "default")
        except (ValueError, KeyError, TypeError) as err:
            return self.send(400, compact({"error": "invalid JSON request body: %s" % err}))
        idx = self.server.index
        key = (model, tenant)
        with idx.lock:
            if key not in idx.parts:
                return self.send(404, compact({"error": "no indexer for model=%s tenant=%s" % (model, tenant)}))
            rfc = a.api == "rfc"
            by_hash = self.path == "/query_by_hash"
            if by_hash and rfc:
                s = idx.p.get(key, {"ehash": {}})
                chains = []
                for h in q.get("seq_hashes", q.get("block_hash", [])):
                    c = s["ehash"].get(int(h))
                    if c is None:
                        break
                    chains.append(c)
            elif by_hash:
                chains, parent = [], ROOT
                for h in q["block_hashes"]:
                    parent = chain_next(parent, int(h))
                    chains.append(parent)
            else:
                chains = token_chains(q["token_ids"], bs, rfc)
            ans = idx.rfc(key, chains, bs, q.get("instance_id")) if rfc else idx.conductor(key, chains, bs, by_hash)
        self.send(200, compact({tenant: ans}))


def feed(idx, args):
    """Applies the events file's lines (with --follow, as it grows)."""
    buf, queue, done = b"", collections.deque(), 0
    with open(args.events, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if chunk:
                buf += chunk
                *lines, buf = buf.split(b"\n")
                queue.extend(lines)
            now = time.time_ns()
            with idx.lock:
                while queue and (args.limit is None or done < args.limit):
                    if args.lag:
                        try:
                            if json.loads(queue[0]).get("recv_ns", 0) + int(args.lag * 1e9) > now:
                                break
                        except ValueError:
                            pass
                    idx.apply_line(queue.popleft())
                    done += 1
                if not chunk and not args.follow and (not queue or args.limit is not None):
                    idx.flush_group()
            if not chunk:
                idx.ready.set()
                if not args.follow and (not queue or (args.limit is not None and done >= args.limit)):
                    return
                time.sleep(0.02)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ready", help="write the port here once listening and the events are read")
    ap.add_argument("-r", "--registrations")
    ap.add_argument("--events")
    ap.add_argument("--follow", action="store_true")
    ap.add_argument("--api", choices=("conductor", "rfc"), default="conductor")
    ap.add_argument("--walk", choices=("own", "shared"), default=None)
    ap.add_argument("--placeholder-key", action="store_true")
    ap.add_argument("--swallow-gpu-removal", action="store_true")
    ap.add_argument("--lose-confirmation", action="store_true")
    ap.add_argument("--swallow-pool-removal", action="store_true")
    ap.add_argument("--signed-mooncake", action="store_true")
    ap.add_argument("--by-hash-blocks", action="store_true")
    ap.add_argument("--conductor", action="store_true")
    ap.add_argument("--lag", type=float, default=0)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--drop", action="append", default=[])
    ap.add_argument("--status", type=int, default=0)
    ap.add_argument("--garbage", action="store_true")
    ap.add_argument("--cut", action="store_true")
    ap.add_argument("--truncate", action="store_true")
    ap.add_argument("--slow", type=float, default=0.0)
    ap.add_argument("--lifetime", type=float, default=120)
    a = ap.parse_args()
    if a.conductor:
        a.placeholder_key = a.swallow_gpu_removal = a.lose_confirmation = True
        a.swallow_pool_removal = a.signed_mooncake = a.by_hash_blocks = True
        a.walk = a.walk or "shared"
    a.walk = a.walk or "own"
    regs = []
    if a.registrations:
        with open(a.registrations) as f:
            regs = [json.loads(l) for l in f if l.strip()]
    idx = Index(a, regs)
    idx.ready = threading.Event()
    if a.events:
        threading.Thread(target=feed, args=(idx, a), daemon=True).start()
        idx.ready.wait(a.lifetime)
    # a backlog for kvquery's every connection at once (socketserver's is 5)
    ThreadingHTTPServer.request_queue_size = 128
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    srv.args, srv.index = a, idx
    srv.stats_lock, srv.requests, srv.in_flight, srv.max_in_flight = threading.Lock(), 0, 0, 0
    threading.Timer(a.lifetime, lambda: os._exit(0)).start()
    if a.ready:
        with open(a.ready + ".tmp", "w") as f:
            f.write("%d\n" % a.port)
        os.rename(a.ready + ".tmp", a.ready)
    srv.serve_forever()


if __name__ == "__main__":
    main()
