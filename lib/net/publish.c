#include "net/publish.h"
#include "net/replaybuf.h"
#include "base/jsonw.h"
#include "base/strmap.h"
#include "base/utf8.h"
#include "base/util.h"

#include <stdatomic.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

struct sock {
	char *endpoint;              /* as shown: given, or ZMQ's for a wildcard port */
	void *pub;
	char *replay_ep;
	void *router;
	struct kv_replaybuf buf;
	uint64_t messages, sent_bytes, dropped, requests, replayed, bad_requests;
	uint64_t refused;            /* replay requests refused: too much queued already */
};

/* A replay client (a ROUTER identity) and the bytes of replies ZeroMQ still
 * holds for it.  ZeroMQ frees a reply's payload, on its I/O thread, once it
 * is written out: the counters are atomic, and a peer record lives until
 * the context is gone. */
struct peer {
	uint8_t id[256];
	size_t idn;
	_Atomic size_t queued;
	_Atomic size_t *total;       /* the kv_pub's, in all */
};

struct reply_hint {
	struct peer *peer;
	size_t n;
};

enum { SOCK_UNDECIDED = -2, SOCK_NONE = -1 };

struct kv_pub_src {
	char *name;
	size_t len;
	long sock;                   /* index, SOCK_NONE, or SOCK_UNDECIDED */
	char *replay_ep;             /* from a replay map */
	bool mapped;                 /* named by a map */
	bool looked_up;
};

struct kv_pub {
	void *zctx;
	struct kv_pub_opts o;
	struct sock *socks;
	size_t nsocks, capsocks;
	size_t nauto;                /* sockets bound from the port base */
	struct kv_pub_src **srcs;
	size_t nsrcs, capsrcs;
	struct kv_strmap names;      /* src name -> its index in srcs (the keys are their names) */
	zmq_pollitem_t *items;       /* the routers, then room for one fd */
	size_t nrouters, capitems;
	uint64_t last_serve;
	struct peer **peers;         /* replay clients met, at most KV_PUB_MAX_PEERS */
	size_t npeers;
	_Atomic size_t reply_queued; /* bytes of replies ZeroMQ holds, all clients */
};

struct kv_pub *kv_pub_new(const struct kv_pub_opts *o)
{
	struct kv_pub *p = kv_xcalloc(1, sizeof *p);
	p->zctx = zmq_ctx_new();
	if (!p->zctx)
		kv_die(KV_EX_SOFTWARE, "zmq_ctx_new: %s", zmq_strerror(errno));
	/* ZeroMQ allows 1023 sockets unless told otherwise, fewer than a capture
	 * of a large cluster needs with --port-base: allow what it can, the
	 * open-files limit then being the bound (bind_new reports it). */
	int limit = zmq_ctx_get(p->zctx, ZMQ_SOCKET_LIMIT);
	if (limit > 0)
		zmq_ctx_set(p->zctx, ZMQ_MAX_SOCKETS, limit);
	p->o = *o;
	kv_strmap_init(&p->names, false);
	return p;
}

/* ---- sources ---- */

static struct kv_pub_src *find_src(struct kv_pub *p, const char *name, size_t len, bool create)
{
	uint32_t id = kv_strmap_find(&p->names, name, len);
	if (id != KV_STRMAP_NONE)
		return p->srcs[id];
	if (!create || p->nsrcs >= KV_PUB_MAX_SOURCES)
		return NULL;
	struct kv_pub_src *s = kv_xcalloc(1, sizeof *s);
	s->name = kv_xstrndup(name, len);
	s->len = len;
	s->sock = SOCK_UNDECIDED;
	/* an array of pointers: its element is a pointer */
	p->srcs = kv_xgrow(p->srcs, &p->capsrcs, p->nsrcs + 1, sizeof *p->srcs); // NOLINT(bugprone-sizeof-expression)
	p->srcs[p->nsrcs++] = s;
	kv_strmap_add(&p->names, s->name, len, 0);
	return s;
}

/* ---- sockets ---- */

static void set_int(void *s, int opt, int v)
{
	zmq_setsockopt(s, opt, &v, sizeof v);
}

/* Binds a new socket of the given type; false with 64 or 69 in e. */
static bool bind_new(struct kv_pub *p, int type, const char *endpoint, void **out, char **shown, struct kv_err *e)
{
	void *s = zmq_socket(p->zctx, type);
	if (!s)
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: cannot open a socket after %zu: %s", endpoint,
				  p->nsocks + p->nrouters, zmq_strerror(errno));
	set_int(s, ZMQ_LINGER, 0);
	if (type == ZMQ_PUB) {
		set_int(s, ZMQ_SNDHWM, p->o.hwm);
	} else {
		/* A reply is at most the whole buffer and its end marker; what a
		 * peer that does not read leaves queued is bounded by this. */
		size_t hwm = 2 * (p->o.buffer_steps + 1);
		set_int(s, ZMQ_SNDHWM, hwm > INT_MAX ? INT_MAX : (int)hwm);
		int64_t maxmsg = 4096;   /* requests are two small frames */
		zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
	}
	if (strchr(endpoint, '['))
		set_int(s, ZMQ_IPV6, 1);
	if (zmq_bind(s, endpoint) != 0) {
		int errnum = errno;
		zmq_close(s);
		bool usage = errnum == EINVAL || errnum == EPROTONOSUPPORT || errnum == ENOCOMPATPROTO || errnum == ENODEV;
		return kv_err_set(e, usage ? KV_EX_USAGE : KV_EX_UNAVAILABLE, "%s: cannot bind: %s", endpoint,
				  zmq_strerror(errnum));
	}
	size_t n = strlen(endpoint);
	char last[512];
	size_t lastlen = sizeof last;
	/* A wildcard port (tcp://127.0.0.1:*) is shown as the port ZMQ chose. */
	if (n >= 2 && strcmp(endpoint + n - 2, ":*") == 0 &&
	    zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, last, &lastlen) == 0 && lastlen > 1)
		*shown = kv_xstrndup(last, strnlen(last, lastlen));
	else
		*shown = kv_xstrdup(endpoint);
	*out = s;
	return true;
}

static char *port_endpoint(const char *host, long port)
{
	char buf[300];
	bool v6 = strchr(host, ':') && host[0] != '[';
	snprintf(buf, sizeof buf, v6 ? "tcp://[%s]:%ld" : "tcp://%s:%ld", host, port);
	return kv_xstrdup(buf);
}

static void add_router_item(struct kv_pub *p, void *router)
{
	p->items = kv_xgrow(p->items, &p->capitems, p->nrouters + 2, sizeof *p->items);
	p->items[p->nrouters++] = (zmq_pollitem_t){ .socket = router, .events = ZMQ_POLLIN };
}

/* Gives socket i its replay socket at endpoint; a socket has at most one. */
static bool attach_replay(struct kv_pub *p, size_t i, const char *endpoint, struct kv_err *e)
{
	struct sock *k = &p->socks[i];
	if (k->router) {
		if (strcmp(k->replay_ep, endpoint) == 0)
			return true;
		return kv_err_set(e, KV_EX_USAGE, "%s: already served by the replay socket %s", k->endpoint,
				  k->replay_ep);
	}
	if (!bind_new(p, ZMQ_ROUTER, endpoint, &k->router, &k->replay_ep, e))
		return false;
	add_router_item(p, k->router);
	return true;
}

/* The index of the PUB socket on endpoint, binding it when new. */
static bool pub_socket(struct kv_pub *p, const char *endpoint, long *index, struct kv_err *e)
{
	for (size_t i = 0; i < p->nsocks; i++)
		if (strcmp(p->socks[i].endpoint, endpoint) == 0) {
			*index = (long)i;
			return true;
		}
	void *s = NULL;
	char *shown = NULL;
	if (!bind_new(p, ZMQ_PUB, endpoint, &s, &shown, e))
		return false;
	p->socks = kv_xgrow(p->socks, &p->capsocks, p->nsocks + 1, sizeof *p->socks);
	struct sock *k = &p->socks[p->nsocks];
	memset(k, 0, sizeof *k);
	k->pub = s;
	k->endpoint = shown;
	kv_replaybuf_init(&k->buf, p->o.buffer_steps, p->o.buffer_bytes);
	*index = (long)p->nsocks++;
	return true;
}

/* The replay socket of socket i: the given endpoint (from a replay map),
 * else, with a replay port base, the port counted by socket. */
static bool replay_for(struct kv_pub *p, long i, const char *replay_ep, struct kv_err *e)
{
	if (replay_ep)
		return attach_replay(p, (size_t)i, replay_ep, e);
	if (p->o.replay_port_base < 0 || p->socks[i].router)
		return true;
	long port = p->o.replay_port_base + i;
	if (port > 65535)
		return kv_err_set(e, KV_EX_USAGE, "--replay-port-base %ld: no port left for %s", p->o.replay_port_base,
				  p->socks[i].endpoint);
	char *ep = port_endpoint(p->o.host, port);
	bool ok = attach_replay(p, (size_t)i, ep, e);
	free(ep);
	return ok;
}

static bool assign(struct kv_pub *p, struct kv_pub_src *s, long i, struct kv_err *e)
{
	s->sock = i;
	return replay_for(p, i, s->replay_ep, e);
}

bool kv_pub_replay_map(struct kv_pub *p, const char *src, const char *endpoint, struct kv_err *e)
{
	struct kv_pub_src *s = find_src(p, src, strlen(src), true);
	if (!s)
		return kv_err_set(e, KV_EX_USAGE, "%s: more than %u sources", src, KV_PUB_MAX_SOURCES);
	if (s->replay_ep)
		return kv_err_set(e, KV_EX_USAGE, "%s: --replay-map names it twice", src);
	s->replay_ep = kv_xstrdup(endpoint);
	return true;
}

bool kv_pub_map(struct kv_pub *p, const char *src, const char *endpoint, struct kv_err *e)
{
	struct kv_pub_src *s = find_src(p, src, strlen(src), true);
	if (!s)
		return kv_err_set(e, KV_EX_USAGE, "%s: more than %u sources", src, KV_PUB_MAX_SOURCES);
	if (s->sock != SOCK_UNDECIDED)
		return kv_err_set(e, KV_EX_USAGE, "%s: --map names it twice", src);
	s->mapped = true;
	long i;
	return pub_socket(p, endpoint, &i, e) && assign(p, s, i, e);
}

bool kv_pub_start(struct kv_pub *p, struct kv_err *e)
{
	if (!p->o.single) {
		/* With maps alone, a replay map for a source without one would never be used. */
		for (size_t k = 0; p->o.port_base < 0 && k < p->nsrcs; k++)
			if (p->srcs[k]->sock == SOCK_UNDECIDED)
				return kv_err_set(e, KV_EX_USAGE, "--replay-map: %s is not published (no --map for it)",
						  p->srcs[k]->name);
		return true;
	}
	long i;
	if (!pub_socket(p, p->o.single, &i, e))
		return false;
	/* Replay maps name sources, but with one socket they all mean its replay socket. */
	for (size_t k = 0; k < p->nsrcs; k++)
		if (p->srcs[k]->replay_ep && !assign(p, p->srcs[k], i, e))
			return false;
	return replay_for(p, i, NULL, e);
}

bool kv_pub_lookup(struct kv_pub *p, const char *src, size_t len, struct kv_pub_route *r, struct kv_err *e)
{
	struct kv_pub_src *s = find_src(p, src, len, true);
	if (!s) {
		*r = (struct kv_pub_route){ .over = true };
		return true;
	}
	*r = (struct kv_pub_route){ .src = s, .name = s->name, .fresh = !s->looked_up };
	s->looked_up = true;
	if (s->sock == SOCK_UNDECIDED) {
		if (p->o.single) {
			if (!assign(p, s, 0, e))
				return false;
		} else if (p->o.port_base >= 0) {
			long port = p->o.port_base + (long)p->nauto, i;
			if (port > 65535)
				return kv_err_set(e, KV_EX_USAGE, "--port-base %ld: no port left for %s", p->o.port_base,
						  s->name);
			char *ep = port_endpoint(p->o.host, port);
			bool ok = pub_socket(p, ep, &i, e);
			free(ep);
			if (ok) {
				p->nauto++;
				ok = assign(p, s, i, e);
			}
			if (!ok)
				return false;
			r->bound = true;
		} else {
			s->sock = SOCK_NONE;
		}
	}
	r->published = s->sock >= 0;
	return true;
}

/* ---- sending ---- */

static bool send_frame(void *s, const void *data, size_t n, int flags)
{
	static const uint8_t none;
	for (;;) {
		if (zmq_send(s, n ? data : &none, n, flags) >= 0)
			return true;
		if (zmq_errno() != EINTR)
			return false;
	}
}

bool kv_pub_send(struct kv_pub *p, const struct kv_pub_src *s, const struct kv_record *rec, bool drop,
		 struct kv_err *e)
{
	struct sock *k = &p->socks[s->sock];
	if (rec->nframes == 0)
		return true;
	if (drop) {
		k->dropped++;
	} else {
		uint64_t bytes = 0;
		for (size_t i = 0; i < rec->nframes; i++) {
			if (!send_frame(k->pub, rec->frames[i].p, rec->frames[i].n,
					i + 1 < rec->nframes ? ZMQ_SNDMORE : 0))
				return kv_err_set(e, KV_EX_SOFTWARE, "%s: cannot send: %s", k->endpoint,
						  zmq_strerror(zmq_errno()));
			bytes += rec->frames[i].n;
		}
		k->messages++;
		k->sent_bytes += bytes;
	}
	struct kv_msg_parts m;
	kv_msg_split(rec->frames, rec->nframes, &m);
	if (m.has_seq)
		kv_replaybuf_keep(&k->buf, m.seq, m.topic, m.payload);
	return true;
}

/* ---- the replay servers ---- */

#define MAX_REQUEST_FRAMES 8

/* What one reply message costs while queued: its frames and ZeroMQ's own
 * bookkeeping of them, about 64 bytes a frame. */
#define REPLY_OVERHEAD 320

static void reply_freed(void *data, void *hint)
{
	struct reply_hint *h = hint;
	atomic_fetch_sub(&h->peer->queued, h->n);
	atomic_fetch_sub(h->peer->total, h->n);
	free(data);
	free(h);
}

/* The last frame goes as a message of its own memory, counted against the
 * client until ZeroMQ frees it (reply_freed). */
static bool send_counted(void *s, struct peer *peer, struct kv_frame f, size_t cost)
{
	uint8_t *copy = kv_xmalloc(f.n ? f.n : 1);
	if (f.n)
		memcpy(copy, f.p, f.n);
	struct reply_hint *h = kv_xmalloc(sizeof *h);
	*h = (struct reply_hint){ peer, cost };
	atomic_fetch_add(&peer->queued, cost);
	atomic_fetch_add(peer->total, cost);
	zmq_msg_t m;
	zmq_msg_init_data(&m, copy, f.n, reply_freed, h);
	for (;;) {
		if (zmq_msg_send(&m, s, ZMQ_DONTWAIT) >= 0)
			return true;
		if (zmq_errno() != EINTR) {
			zmq_msg_close(&m);  /* frees it: reply_freed */
			return false;
		}
	}
}

static bool send_reply(struct sock *k, struct peer *peer, enum kv_replay_shape shape,
		       struct kv_frame topic, uint64_t seq, struct kv_frame payload)
{
	uint8_t seqb[8];
	struct kv_frame f[4];
	size_t n = kv_replay_reply(shape, topic, seq, payload, seqb, f);
	if (!send_frame(k->router, peer->id, peer->idn, ZMQ_SNDMORE | ZMQ_DONTWAIT))
		return false;
	for (size_t i = 0; i + 1 < n; i++)
		if (!send_frame(k->router, f[i].p, f[i].n, ZMQ_SNDMORE | ZMQ_DONTWAIT))
			return false;
	return send_counted(k->router, peer, f[n - 1], topic.n + payload.n + REPLY_OVERHEAD);
}

/* The record of the client with this identity; a new one when there is
 * room (a record whose replies are all gone is reused), else NULL. */
static struct peer *peer_of(struct kv_pub *p, zmq_msg_t *identity)
{
	size_t n = zmq_msg_size(identity);
	const void *id = zmq_msg_data(identity);
	struct peer *idle = NULL;
	if (n > sizeof idle->id)
		return NULL;
	for (size_t i = 0; i < p->npeers; i++) {
		struct peer *q = p->peers[i];
		if (q->idn == n && memcmp(q->id, id, n) == 0)
			return q;
		if (!idle && atomic_load(&q->queued) == 0)
			idle = q;
	}
	if (!idle && p->npeers < KV_PUB_MAX_PEERS) {
		p->peers = kv_xrealloc(p->peers, (p->npeers + 1) * sizeof(struct peer *));
		idle = p->peers[p->npeers++] = kv_xcalloc(1, sizeof *idle);
		idle->total = &p->reply_queued;
	}
	if (idle) {
		memcpy(idle->id, id, n);
		idle->idn = n;
	}
	return idle;
}

/* Bytes of the reply to a request from start: the kept batches from start
 * on, and the end marker. */
static size_t reply_size(const struct sock *k, uint64_t start)
{
	size_t bytes = REPLY_OVERHEAD;
	for (size_t j = 0; j < kv_replaybuf_count(&k->buf); j++) {
		const struct kv_replaybuf_entry *e = kv_replaybuf_at(&k->buf, j);
		if (e->seq >= start)
			bytes += e->topic_n + e->payload_n + REPLY_OVERHEAD;
	}
	return bytes;
}

/* A client that does not read its replies must not make kvpub hold them
 * without bound (kvpub(1), Replay): a reply is refused when that client
 * already has KV_PUB_REPLY_CLIENT_BYTES queued, or all clients together
 * KV_PUB_REPLY_TOTAL_BYTES.  A client with nothing queued, when nothing is
 * queued in all, always gets its reply, however large the buffer. */
static bool reply_fits(const struct kv_pub *p, const struct peer *peer, size_t bytes)
{
	size_t mine = atomic_load(&peer->queued), all = atomic_load(&p->reply_queued);
	if (mine && mine + bytes > KV_PUB_REPLY_CLIENT_BYTES)
		return false;
	return !all || all + bytes <= KV_PUB_REPLY_TOTAL_BYTES;
}

/* Answers one request waiting on k's router, if any; false when none was. */
static bool serve_one(struct kv_pub *p, struct sock *k)
{
	zmq_msg_t part[MAX_REQUEST_FRAMES];
	size_t n = 0;
	bool over = false, more = true;
	while (more) {
		zmq_msg_t extra, *m = n < MAX_REQUEST_FRAMES ? &part[n] : &extra;
		zmq_msg_init(m);
		if (zmq_msg_recv(m, k->router, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
			zmq_msg_close(m);
			break;
		}
		more = zmq_msg_more(m);
		if (m == &extra) {
			over = true;
			zmq_msg_close(m);
		} else {
			n++;
		}
	}
	if (n == 0)
		return false;
	struct kv_frame fr[MAX_REQUEST_FRAMES];
	for (size_t i = 0; i < n; i++)
		fr[i] = (struct kv_frame){ zmq_msg_data(&part[i]), zmq_msg_size(&part[i]) };
	uint64_t start;
	struct peer *peer = NULL;
	if (over || n < 2 || !kv_replay_parse_request(fr + 1, n - 1, &start)) {
		k->bad_requests++;   /* vLLM logs these and answers nothing */
	} else if (k->requests++, !(peer = peer_of(p, &part[0])) || !reply_fits(p, peer, reply_size(k, start))) {
		k->refused++;        /* answered nothing, as vLLM does to a bad one */
	} else {
		static const uint8_t none;
		bool ok = true;
		for (size_t j = 0; ok && j < kv_replaybuf_count(&k->buf); j++) {
			const struct kv_replaybuf_entry *e = kv_replaybuf_at(&k->buf, j);
			if (e->seq < start)
				continue;
			ok = send_reply(k, peer, p->o.shape, kv_replaybuf_topic(e), e->seq, kv_replaybuf_payload(e));
			k->replayed += ok;
		}
		if (ok)
			send_reply(k, peer, p->o.shape, (struct kv_frame){ &none, 0 }, KV_REPLAY_END,
				   (struct kv_frame){ &none, 0 });
	}
	for (size_t i = 0; i < n; i++)
		zmq_msg_close(&part[i]);
	return true;
}

static struct sock *sock_of_router(struct kv_pub *p, const void *router)
{
	for (size_t i = 0; i < p->nsocks; i++)
		if (p->socks[i].router == router)
			return &p->socks[i];
	return NULL;
}

/* Polls the routers (and fd when >= 0) up to timeout_ms and answers what
 * came; 1 when fd is ready, 0 otherwise (also when interrupted). */
static int poll_serve(struct kv_pub *p, long timeout_ms, int fd)
{
	size_t n = p->nrouters;
	if (fd >= 0) {
		p->items = kv_xgrow(p->items, &p->capitems, n + 1, sizeof *p->items);
		p->items[n++] = (zmq_pollitem_t){ .socket = NULL, .fd = fd, .events = ZMQ_POLLIN };
	}
	p->last_serve = kv_monotonic_ns();
	if (n == 0)
		return 0;
	int rc = zmq_poll(p->items, (int)n, timeout_ms);
	if (rc <= 0)
		return 0;
	for (size_t i = 0; i < p->nrouters; i++) {
		if (!(p->items[i].revents & ZMQ_POLLIN))
			continue;
		struct sock *k = sock_of_router(p, p->items[i].socket);
		/* A bounded number per call, so that publishing goes on under a flood. */
		for (int j = 0; j < 16 && k && serve_one(p, k); j++)
			;
	}
	return fd >= 0 && p->items[p->nrouters].revents ? 1 : 0;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	nanosleep(&ts, NULL);   /* EINTR: the caller looks at the stop flag */
}

#define SLICE_NS 100000000ull   /* the stop flag is looked at this often */

bool kv_pub_wait_until(struct kv_pub *p, uint64_t due_ns)
{
	uint64_t now = kv_monotonic_ns();
	/* Publishing flat out still answers replay requests every millisecond. */
	if (p->nrouters && now - p->last_serve >= 1000000)
		poll_serve(p, 0, -1);
	for (;;) {
		if (kv_stop_signal)
			return false;
		now = kv_monotonic_ns();
		if (now >= due_ns)
			return true;
		uint64_t left = due_ns - now;
		if (left > SLICE_NS)
			left = SLICE_NS;
		if (p->nrouters && left >= 1000000)
			poll_serve(p, (long)(left / 1000000), -1);
		else
			sleep_ns(left);
	}
}

bool kv_pub_wait_input(struct kv_pub *p, int fd)
{
	while (!kv_stop_signal)
		if (poll_serve(p, SLICE_NS / 1000000, fd) == 1)
			return true;
	return false;
}

/* ---- reporting ---- */

const char *kv_pub_next_unseen(const struct kv_pub *p, size_t *pos, const char **option)
{
	for (; *pos < p->nsrcs; (*pos)++) {
		const struct kv_pub_src *s = p->srcs[*pos];
		if (!s->looked_up && (s->mapped || s->replay_ep)) {
			*option = s->mapped ? "--map" : "--replay-map";
			return p->srcs[(*pos)++]->name;
		}
	}
	return NULL;
}

void kv_pub_print_route(const struct kv_pub *p, const struct kv_pub_src *s, FILE *f)
{
	if (s->sock < 0)
		return;
	const struct sock *k = &p->socks[s->sock];
	char name[512];
	kv_printable(name, sizeof name, s->name, strlen(s->name));
	fprintf(f, "%s: %s -> %s", kv_prog, name, k->endpoint);
	if (k->router)
		fprintf(f, ", replay %s", k->replay_ep);
	fputc('\n', f);
}

static void put_pair(struct jw *w, const char *key, const char *v)
{
	jw_put_cstr(w, key);
	jw_put_char(w, ':');
	jw_put_cstr(w, v);
}

void kv_pub_write_route(const struct kv_pub *p, const struct kv_pub_src *s, struct kv_out *o)
{
	if (s->sock < 0)
		return;
	const struct sock *k = &p->socks[s->sock];
	struct jw w;
	jw_begin(&w, o);
	jw_put_char(&w, '{');
	put_pair(&w, "src", s->name);
	jw_put_char(&w, ',');
	put_pair(&w, "endpoint", k->endpoint);
	if (k->router) {
		jw_put_char(&w, ',');
		put_pair(&w, "replay_endpoint", k->replay_ep);
	}
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

void kv_pub_print_stats(const struct kv_pub *p, bool drops, FILE *f)
{
	for (size_t i = 0; i < p->nsocks; i++) {
		const struct sock *k = &p->socks[i];
		fprintf(f, "%s: %s: %llu messages, %llu bytes", kv_prog, k->endpoint,
			(unsigned long long)k->messages, (unsigned long long)k->sent_bytes);
		if (drops)
			fprintf(f, ", %llu dropped", (unsigned long long)k->dropped);
		if (k->router)
			fprintf(f, ", %llu replay requests, %llu replayed", (unsigned long long)k->requests,
				(unsigned long long)k->replayed);
		if (k->bad_requests)
			fprintf(f, ", %llu bad replay requests", (unsigned long long)k->bad_requests);
		if (k->refused)
			fprintf(f, ", %llu replay requests refused (replies not read)", (unsigned long long)k->refused);
		fputc('\n', f);
	}
}

size_t kv_pub_sockets(const struct kv_pub *p)
{
	return p->nsocks;
}

void kv_pub_free(struct kv_pub *p, bool flush)
{
	for (size_t i = 0; i < p->nsocks; i++) {
		struct sock *k = &p->socks[i];
		set_int(k->pub, ZMQ_LINGER, flush ? 1000 : 0);
		zmq_close(k->pub);
		if (k->router)
			zmq_close(k->router);
		kv_replaybuf_free(&k->buf);
		free(k->endpoint);
		free(k->replay_ep);
	}
	for (size_t i = 0; i < p->nsrcs; i++) {
		free(p->srcs[i]->name);
		free(p->srcs[i]->replay_ep);
		free(p->srcs[i]);
	}
	while (zmq_ctx_term(p->zctx) != 0 && zmq_errno() == EINTR)
		;
	for (size_t i = 0; i < p->npeers; i++)
		free(p->peers[i]);
	free(p->peers);
	free(p->socks);
	free(p->srcs);
	kv_strmap_free(&p->names);
	free(p->items);
	free(p);
}
