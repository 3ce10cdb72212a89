#include "net/capture.h"
#include "base/endpoint.h"
#include "net/gapfill.h"
#include "decode/kvcap.h"
#include "base/metrics.h"
#include "net/replay.h"
#include "decode/seqtrack.h"
#include "decode/wire.h"
#include "base/utf8.h"
#include "base/util.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

/* Bounds on what one endpoint keeps in memory while a replay runs; past
 * them the replay is cut short and the held messages are written. */
#define MAX_HELD 100000
#define MAX_HELD_BYTES (256u << 20)
#define MAX_DRAIN 1024

struct endpoint {
	struct kv_capture *c;
	char *src;
	void *sub;                   /* NULL while it could not be opened again */
	void *monitor;               /* the sub's ZeroMQ events, when it connects over a stream */
	bool shaken;                 /* its connection completed ZMTP's handshake */
	uint64_t lost_ns;            /* a disconnect ZeroMQ has not reconnected since: when; 0 none */
	bool lost_shaken;            /* ... of a connection that had completed the handshake */
	char *replay_url;
	struct kv_gapfill gf;        /* its seq order, replays and their accounting */
	bool mooncake;          /* its last batch was a Mooncake master's: its seq counts events */
	uint64_t messages, bytes, bad_seq, oversize, replay_failures;
	uint64_t snapshots;          /* replays answered with a snapshot, not used */
	uint64_t behind;             /* dropped: KV_CAPTURE_MAX_HELD bytes already wait for a slow reader */
	void *dealer;                /* the replay socket, while an ask of a replay runs */
	uint64_t ask_deadline_ns;    /* the ask ends when nothing came by then */
	uint64_t replay_deadline_ns; /* the replay gives up then */
	uint64_t last_ns;            /* wall time of its last message */
};

/* What a poll item stands for. */
enum item_kind { ITEM_SUB, ITEM_DEALER, ITEM_MONITOR, ITEM_OUTPUT };

struct kv_capture {
	void *zctx;
	struct kv_out *out;
	struct kv_capture_opts opts;
	struct endpoint *eps;
	size_t neps, capeps;
	zmq_pollitem_t *items;
	struct item { size_t ep; enum item_kind kind; } *what;   /* of each item */
	size_t capitems, capwhat;
	uint64_t monitors;           /* monitors opened, for their names */
	uint64_t held;               /* records written while the reader had not taken all */
	uint64_t records;
};

struct kv_capture *kv_capture_new(struct kv_out *out, const struct kv_capture_opts *opts)
{
	struct kv_capture *c = kv_xcalloc(1, sizeof *c);
	c->zctx = zmq_ctx_new();
	if (!c->zctx)
		kv_die(KV_EX_SOFTWARE, "zmq_ctx_new: %s", zmq_strerror(errno));
	/* ZeroMQ allows 1023 sockets unless told otherwise, fewer than a large
	 * registrations file names: allow what it can, the open-files limit
	 * then being the bound (kv_capture_add reports it). */
	int limit = zmq_ctx_get(c->zctx, ZMQ_SOCKET_LIMIT);
	if (limit > 0)
		zmq_ctx_set(c->zctx, ZMQ_MAX_SOCKETS, limit);
	c->out = out;
	c->opts = *opts;
	if (c->opts.max_message == 0)
		c->opts.max_message = KV_CAPTURE_MAX_MESSAGE;
	if (c->opts.max_message > KV_CAP_MAX_RECORD)
		c->opts.max_message = KV_CAP_MAX_RECORD;
	return c;
}

static void set_int(void *s, int opt, int v)
{
	zmq_setsockopt(s, opt, &v, sizeof v);
}

/* ZeroMQ's receive high-water mark counts messages of any size: at most
 * --hwm of them, and few enough that frames of max_message fill no more
 * than KV_CAPTURE_MAX_QUEUED bytes (at least one). */
static int queue_hwm(const struct kv_capture_opts *o)
{
	uint64_t n = KV_CAPTURE_MAX_QUEUED / o->max_message;
	if (n == 0)
		n = 1;
	if (o->hwm > 0 && (uint64_t)o->hwm < n)
		n = (uint64_t)o->hwm;
	return n > INT_MAX ? INT_MAX : (int)n;
}

/* A receiving socket's bounds: the queue and the largest frame. */
static void bound_receiving(const struct kv_capture *c, void *s)
{
	set_int(s, ZMQ_LINGER, 0);
	set_int(s, ZMQ_RCVHWM, queue_hwm(&c->opts));
	int64_t maxmsg = (int64_t)c->opts.max_message;
	zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
}

static struct endpoint *find_ep(struct kv_capture *c, const char *src)
{
	for (size_t i = 0; i < c->neps; i++)
		if (strcmp(c->eps[i].src, src) == 0)
			return &c->eps[i];
	return NULL;
}

/* A replay endpoint is connected only when needed; this checks ZMQ accepts it. */
static bool replay_endpoint_ok(struct kv_capture *c, const char *url, struct kv_err *e)
{
	void *s = zmq_socket(c->zctx, ZMQ_DEALER);
	if (!s)
		return kv_err_set(e, KV_EX_USAGE, "%s: cannot open a socket: %s", url, zmq_strerror(errno));
	set_int(s, ZMQ_LINGER, 0);
	int rc = zmq_connect(s, url);
	if (rc != 0)
		kv_err_set(e, KV_EX_USAGE, "%s: invalid replay endpoint (%s)", url, zmq_strerror(errno));
	zmq_close(s);
	return rc == 0;
}

/* ZeroMQ drops the connection of a publisher that sends a frame over
 * ZMQ_MAXMSGSIZE and, when it was the one connecting, never connects
 * again; a monitor of the socket shows it: a disconnect with no reconnect
 * after it.  Over inproc no frame is refused, and a bound socket's
 * publisher connects again itself. */
static bool needs_monitor(const struct kv_capture *c, const char *endpoint)
{
	return !c->opts.bind && strncmp(endpoint, "inproc://", 9) != 0;
}

static bool open_monitor(struct kv_capture *c, struct endpoint *ep)
{
	char name[64];
	snprintf(name, sizeof name, "inproc://kvtools-capture-monitor-%llu", (unsigned long long)c->monitors++);
	if (zmq_socket_monitor(ep->sub, name, ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CONNECT_RETRIED |
						      ZMQ_EVENT_CONNECT_DELAYED | ZMQ_EVENT_CONNECTED |
						      ZMQ_EVENT_HANDSHAKE_SUCCEEDED) != 0)
		return false;
	ep->monitor = zmq_socket(c->zctx, ZMQ_PAIR);
	if (ep->monitor && zmq_connect(ep->monitor, name) == 0) {
		set_int(ep->monitor, ZMQ_LINGER, 0);
		return true;
	}
	if (ep->monitor)
		zmq_close(ep->monitor);
	ep->monitor = NULL;
	zmq_socket_monitor(ep->sub, NULL, 0);
	return false;
}

static void close_sub(struct endpoint *ep)
{
	if (ep->monitor) {
		zmq_socket_monitor(ep->sub, NULL, 0);
		zmq_close(ep->monitor);
		ep->monitor = NULL;
	}
	if (ep->sub)
		zmq_close(ep->sub);
	ep->sub = NULL;
}

/* Opens, subscribes and connects (or binds) the endpoint's SUB socket. */
static bool open_sub(struct kv_capture *c, struct endpoint *ep, struct kv_err *e)
{
	const char *endpoint = ep->src;
	void *s = zmq_socket(c->zctx, ZMQ_SUB);
	if (!s)
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: cannot open a socket after %zu endpoints: %s", endpoint,
				  c->neps, zmq_strerror(errno));
	bound_receiving(c, s);
	if (c->opts.ntopics == 0)
		zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0);
	for (size_t i = 0; i < c->opts.ntopics; i++)
		zmq_setsockopt(s, ZMQ_SUBSCRIBE, c->opts.topics[i], strlen(c->opts.topics[i]));
	ep->sub = s;
	if (needs_monitor(c, endpoint) && !open_monitor(c, ep)) {
		int errnum = errno;
		close_sub(ep);
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: cannot open a socket after %zu endpoints: %s", endpoint,
				  c->neps, zmq_strerror(errnum));
	}
	int rc = c->opts.bind ? zmq_bind(s, endpoint) : zmq_connect(s, endpoint);
	if (rc != 0) {
		int errnum = errno;
		close_sub(ep);
		bool usage = errnum == EINVAL || errnum == EPROTONOSUPPORT || errnum == ENOCOMPATPROTO || errnum == ENODEV;
		return kv_err_set(e, usage ? KV_EX_USAGE : KV_EX_UNAVAILABLE, "%s: cannot %s: %s", endpoint,
				  c->opts.bind ? "bind" : "connect", zmq_strerror(errnum));
	}
	return true;
}

bool kv_capture_add(struct kv_capture *c, const char *endpoint, const char *replay_endpoint, struct kv_err *e)
{
	if (strlen(endpoint) > KV_CAP_MAX_SRC) /* it would be every record's src, which readers refuse */
		return kv_err_set(e, KV_EX_USAGE, "%.64s...: endpoint longer than %u bytes", endpoint, KV_CAP_MAX_SRC);
	const char *problem = c->opts.bind ? NULL : kv_endpoint_connect_problem(endpoint);
	if (problem)
		return kv_err_set(e, KV_EX_USAGE, "%s: %s", endpoint, problem);
	struct endpoint *dup = find_ep(c, endpoint);
	if (dup) {
		if (replay_endpoint && !dup->replay_url)
			return kv_capture_set_replay(c, endpoint, replay_endpoint, e);
		return true;
	}
	c->eps = kv_xgrow(c->eps, &c->capeps, c->neps + 1, sizeof *c->eps);
	struct endpoint *ep = &c->eps[c->neps];
	memset(ep, 0, sizeof *ep);
	ep->c = c;
	ep->src = kv_xstrdup(endpoint);
	if (!open_sub(c, ep, e)) {
		free(ep->src);
		return false;
	}
	c->neps++;
	kv_gapfill_init(&ep->gf, MAX_HELD, MAX_HELD_BYTES);
	ep->gf.max_asks = c->opts.replay_retries + 1;
	return !replay_endpoint || kv_capture_set_replay(c, endpoint, replay_endpoint, e);
}

bool kv_capture_set_replay(struct kv_capture *c, const char *src, const char *replay_endpoint, struct kv_err *e)
{
	struct endpoint *ep = find_ep(c, src);
	if (!ep)
		return kv_err_set(e, KV_EX_USAGE, "%s: --replay names an endpoint that is not captured", src);
	if (!replay_endpoint_ok(c, replay_endpoint, e))
		return false;
	free(ep->replay_url);
	ep->replay_url = kv_xstrdup(replay_endpoint);
	ep->gf.may_ask = true;
	return true;
}

size_t kv_capture_count(const struct kv_capture *c) { return c->neps; }
uint64_t kv_capture_records(const struct kv_capture *c) { return c->records; }

static bool limit_reached(const struct kv_capture *c)
{
	return c->opts.max_records && c->records >= c->opts.max_records;
}

/* The output is non-blocking (kv_out_nonblocking): what a slow reader has
 * not taken yet waits here, at most KV_CAPTURE_MAX_HELD bytes and --hwm
 * records, as ZeroMQ would have held --hwm messages. */
static bool held_full(const struct kv_capture *c, uint64_t size)
{
	return c->out->len + size > KV_CAPTURE_MAX_HELD || (c->opts.hwm && c->held >= (uint64_t)c->opts.hwm);
}

static bool room_for(struct kv_capture *c, uint64_t size)
{
	if (!c->out->nonblock)
		return true;
	if (c->out->len == 0)
		c->held = 0;
	if (held_full(c, size)) {
		kv_out_flush(c->out);  /* what the reader takes now */
		if (c->out->len == 0)
			c->held = 0;
		if (held_full(c, size))
			return false;
	}
	c->held++;
	return true;
}

static void write_record(struct kv_capture *c, struct endpoint *ep, uint64_t recv_ns, uint64_t flags,
			 const struct kv_frame *frames, size_t n)
{
	if (limit_reached(c) || kv_out_failed(c->out))
		return;
	/* ZMQ bounds each frame (ZMQ_MAXMSGSIZE), not their sum: a record that
	 * readers would refuse, and with it the rest of the capture, is not
	 * written but counted. */
	uint64_t size = kv_cap_record_size(recv_ns, strlen(ep->src), flags, frames, n);
	if (size > KV_CAP_MAX_RECORD) {
		ep->oversize++;
		return;
	}
	if (!room_for(c, size)) {
		ep->behind++;
		return;
	}
	kv_cap_write_record(c->out, recv_ns, ep->src, strlen(ep->src), flags, frames, n);
	kv_out_end_record(c->out);
	kv_out_flush_if_full(c->out);
	c->records++;
}

/* ---- what the endpoint's gapfill asks of it ---- */

static void gf_write(void *ctx, uint64_t recv_ns, uint64_t flags, const struct kv_frame *frames, size_t n,
		     const struct kv_msg_parts *parts)
{
	struct endpoint *ep = ctx;
	if (!parts->has_seq)
		ep->bad_seq += parts->seq_frame;   /* [topic, payload] and bare payloads: nothing bad */
	else if (!(flags & KV_CAP_FLAG_REPLAYED))
		ep->mooncake = kv_wire_is_mooncake_batch(parts->payload.p, parts->payload.n);
	write_record(ep->c, ep, recv_ns, flags, frames, n);
}

static uint64_t earliest(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Asks for batches [lo, hi); false (nothing asked) when ZMQ refuses.  A
 * replay's first ask sets its deadline: twice (1 + --replay-retries) times
 * --replay-timeout, room for each ask's replies and its wait after them. */
static bool gf_ask(void *ctx, uint64_t lo, uint64_t hi)
{
	struct endpoint *ep = ctx;
	const struct kv_capture_opts *o = &ep->c->opts;
	ep->dealer = zmq_socket(ep->c->zctx, ZMQ_DEALER);
	if (!ep->dealer) {
		ep->replay_failures++;
		return false;
	}
	bound_receiving(ep->c, ep->dealer);
	uint8_t seqbuf[8];
	struct kv_frame req[2];
	kv_replay_request(lo, seqbuf, req);
	(void)hi;   /* vLLM's replay socket sends all it has from lo on */
	if (zmq_connect(ep->dealer, ep->replay_url) != 0 ||
	    zmq_send(ep->dealer, req[0].p, 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
	    zmq_send(ep->dealer, req[1].p, req[1].n, ZMQ_DONTWAIT) < 0) {
		zmq_close(ep->dealer);
		ep->dealer = NULL;
		ep->replay_failures++;
		return false;
	}
	uint64_t now = kv_monotonic_ns();
	if (kv_gapfill_asks(&ep->gf) <= 1)
		ep->replay_deadline_ns = now + 2 * (uint64_t)(o->replay_retries + 1) * o->replay_timeout_ns;
	ep->ask_deadline_ns = earliest(now + o->replay_timeout_ns, ep->replay_deadline_ns);
	return true;
}

static void gf_hang_up(void *ctx)
{
	struct endpoint *ep = ctx;
	if (ep->dealer)
		zmq_close(ep->dealer);
	ep->dealer = NULL;
}

static struct kv_gapfill_io io_of(struct endpoint *ep)
{
	return (struct kv_gapfill_io){ ep, gf_write, gf_ask, gf_hang_up };
}

/* A reply on the replay socket; true when the ask is over (and its socket
 * closed, another perhaps open in its place). */
static bool take_replay_reply(struct endpoint *ep, const struct kv_frame *frames, size_t n, uint64_t recv_ns)
{
	struct kv_replay_reply r;
	struct kv_gapfill_io io = io_of(ep);
	/* an ask ends when nothing comes for --replay-timeout */
	ep->ask_deadline_ns = earliest(kv_monotonic_ns() + ep->c->opts.replay_timeout_ns, ep->replay_deadline_ns);
	kv_replay_parse_reply(frames, n, &r);
	if (r.kind == KV_REPLAY_END_MARK) {
		kv_gapfill_end_replay(&ep->gf, &io);
		return true;
	}
	/* A snapshot is no replay: every batch of it bears its version's seq,
	 * the publisher's last, past the gap.  The replay ends at its header,
	 * not after the whole state has streamed by; the gap stays missing and
	 * the reply is counted (kvsub(1) "Replay"). */
	if (r.kind == KV_REPLAY_SNAPSHOT_MARK) {
		ep->snapshots++;
		kv_gapfill_end_replay(&ep->gf, &io);
		return true;
	}
	if (r.kind != KV_REPLAY_BATCH)
		return false;
	return kv_gapfill_replayed(&ep->gf, &io, recv_ns, r.seq, r.has_topic ? &r.topic : NULL, r.payload);
}

/* Receives one multipart message without waiting; returns its frame count,
 * 0 when none is ready.  Parts beyond KV_CAP_MAX_FRAMES are dropped and *over set. */
static size_t recv_message(void *sock, zmq_msg_t *msgs, bool *over)
{
	size_t n = 0;
	*over = false;
	for (;;) {
		zmq_msg_t *m = &msgs[n < KV_CAP_MAX_FRAMES ? n : KV_CAP_MAX_FRAMES];
		zmq_msg_init(m);
		if (zmq_msg_recv(m, sock, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
			zmq_msg_close(m);
			return n;
		}
		int more = zmq_msg_more(m);
		if (n < KV_CAP_MAX_FRAMES)
			n++;
		else {
			*over = true;
			zmq_msg_close(m);
		}
		if (!more)
			return n;
	}
}

static void frames_of(zmq_msg_t *msgs, size_t n, struct kv_frame *frames, uint64_t *bytes)
{
	*bytes = 0;
	for (size_t i = 0; i < n; i++) {
		frames[i].p = zmq_msg_data(&msgs[i]);
		frames[i].n = zmq_msg_size(&msgs[i]);
		*bytes += frames[i].n;
	}
}

static void on_live(struct endpoint *ep, const struct kv_frame *frames, size_t n, uint64_t bytes)
{
	uint64_t now = kv_realtime_ns();
	ep->last_ns = now;
	ep->messages++;
	ep->bytes += bytes;
	struct kv_gapfill_io io = io_of(ep);
	kv_gapfill_live(&ep->gf, &io, now, frames, n);
}

/* Reads what a socket has ready, at most max messages (fairness); false
 * when it had no more. */
static bool drain_socket(struct kv_capture *c, struct endpoint *ep, bool replay_socket, int max)
{
	zmq_msg_t msgs[KV_CAP_MAX_FRAMES + 1];
	struct kv_frame frames[KV_CAP_MAX_FRAMES];
	for (int k = 0; k < max && !limit_reached(c); k++) {
		bool over, done = false;
		size_t n = recv_message(replay_socket ? ep->dealer : ep->sub, msgs, &over);
		if (n == 0)
			return false;
		uint64_t bytes;
		frames_of(msgs, n, frames, &bytes);
		if (over)
			ep->oversize++;
		else if (replay_socket)
			done = take_replay_reply(ep, frames, n, kv_realtime_ns());
		else
			on_live(ep, frames, n, bytes);
		for (size_t i = 0; i < n; i++)
			zmq_msg_close(&msgs[i]);
		if (done)
			return false;
	}
	return true;
}

/* ---- connections ZeroMQ gave up ---- */

/* Reads the monitor's events: a disconnect starts the wait for ZeroMQ's
 * reconnect, any sign of one ends it.  After the handshake, the only
 * protocol error a publisher makes in practice is a frame over
 * max_message; before it, a peer of the wrong kind (not counted). */
static void take_monitor_events(struct endpoint *ep)
{
	for (;;) {
		zmq_msg_t ev, addr;
		zmq_msg_init(&ev);
		if (zmq_msg_recv(&ev, ep->monitor, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&ev);
			return;
		}
		uint16_t event = 0;
		if (zmq_msg_size(&ev) >= 2)
			memcpy(&event, zmq_msg_data(&ev), 2);
		/* the second frame, the endpoint */
		if (zmq_msg_more(&ev)) {
			zmq_msg_init(&addr);
			zmq_msg_recv(&addr, ep->monitor, 0);
			zmq_msg_close(&addr);
		}
		zmq_msg_close(&ev);
		if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
			ep->shaken = true;
		} else if (event == ZMQ_EVENT_DISCONNECTED) {
			ep->lost_ns = kv_monotonic_ns();
			ep->lost_shaken = ep->shaken;
			ep->shaken = false;
		} else {
			ep->lost_ns = 0;
		}
	}
}

/* A connection ZeroMQ dropped for a protocol error (a frame over
 * max_message) and will not make again: what the socket still has is
 * taken, the refused message counted as oversized, and a new socket
 * connects. */
static void reconnect(struct kv_capture *c, struct endpoint *ep)
{
	if (ep->sub) {
		while (!limit_reached(c) && drain_socket(c, ep, false, MAX_DRAIN))
			;
		ep->oversize += ep->lost_shaken;
		close_sub(ep);
	}
	struct kv_err e = { 0 };
	ep->lost_ns = 0;
	if (!open_sub(c, ep, &e)) {
		/* tried again a while later */
		ep->lost_ns = kv_monotonic_ns();
		kv_warn("%s", kv_err_msg(&e));
		kv_err_clear(&e);
	}
}

static void reconnect_lost(struct kv_capture *c)
{
	uint64_t now = kv_monotonic_ns();
	for (size_t i = 0; i < c->neps; i++)
		if (c->eps[i].lost_ns && now - c->eps[i].lost_ns >= KV_CAPTURE_RECONNECT_NS)
			reconnect(c, &c->eps[i]);
}

/* ---- the loop ---- */

void kv_capture_start(struct kv_capture *c)
{
	if (!c->opts.replay_from_set)
		return;
	for (size_t i = 0; i < c->neps; i++) {
		struct kv_gapfill_io io = io_of(&c->eps[i]);
		kv_gapfill_ask(&c->eps[i].gf, &io, c->opts.replay_from, UINT64_MAX);
	}
}

static void expire_replays(struct kv_capture *c)
{
	uint64_t now = kv_monotonic_ns();
	for (size_t i = 0; i < c->neps; i++) {
		struct endpoint *ep = &c->eps[i];
		if (!kv_gapfill_replaying(&ep->gf))
			continue;
		struct kv_gapfill_io io = io_of(ep);
		if (now >= ep->replay_deadline_ns)
			kv_gapfill_give_up(&ep->gf, &io);
		else if (now >= ep->ask_deadline_ns)
			kv_gapfill_end_replay(&ep->gf, &io);
	}
}

static void add_item(struct kv_capture *c, size_t *k, void *socket, int fd, short events, size_t ep,
		     enum item_kind kind)
{
	c->items = kv_xgrow(c->items, &c->capitems, *k + 1, sizeof *c->items);
	c->what = kv_xgrow(c->what, &c->capwhat, *k + 1, sizeof *c->what);
	c->items[*k] = (zmq_pollitem_t){ .socket = socket, .fd = fd, .events = events };
	c->what[*k] = (struct item){ ep, kind };
	(*k)++;
}

static size_t build_pollset(struct kv_capture *c)
{
	size_t k = 0;
	for (size_t i = 0; i < c->neps; i++) {
		const struct endpoint *ep = &c->eps[i];
		if (ep->dealer)
			add_item(c, &k, ep->dealer, 0, ZMQ_POLLIN, i, ITEM_DEALER);
		if (ep->sub)
			add_item(c, &k, ep->sub, 0, ZMQ_POLLIN, i, ITEM_SUB);
		if (ep->monitor)
			add_item(c, &k, ep->monitor, 0, ZMQ_POLLIN, i, ITEM_MONITOR);
	}
	/* a slow reader's output, when bytes wait for it */
	if (c->out->nonblock && c->out->len)
		add_item(c, &k, NULL, c->out->fd, ZMQ_POLLOUT, 0, ITEM_OUTPUT);
	return k;
}

static int poll_once(struct kv_capture *c, size_t n, long timeout_ms)
{
	int rc = zmq_poll(c->items, (int)n, timeout_ms);
	return rc < 0 ? 0 : rc;
}

/* Handles what the poll found ready.  An endpoint's replay socket comes
 * before its live one (the items are in that order), and a socket that a
 * reply closed (an ask over) is not read again. */
static void handle_ready(struct kv_capture *c, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (!(c->items[k].revents & (ZMQ_POLLIN | ZMQ_POLLOUT)))
			continue;
		struct endpoint *ep = &c->eps[c->what[k].ep];
		switch (c->what[k].kind) {
		case ITEM_DEALER:
			if (ep->dealer == c->items[k].socket)
				drain_socket(c, ep, true, MAX_DRAIN);
			break;
		case ITEM_SUB:
			drain_socket(c, ep, false, MAX_DRAIN);
			break;
		case ITEM_MONITOR:
			take_monitor_events(ep);
			break;
		case ITEM_OUTPUT:
			kv_out_flush(c->out);
			break;
		}
	}
}

bool kv_capture_step(struct kv_capture *c, int timeout_ms)
{
	size_t n = build_pollset(c);
	int ready = poll_once(c, n, 0);
	if (ready == 0) {
		/* Nothing is waiting: this is the moment to hand records downstream. */
		kv_out_flush(c->out);
		ready = poll_once(c, n, timeout_ms);
	}
	if (ready > 0)
		handle_ready(c, n);
	expire_replays(c);
	reconnect_lost(c);
	return !limit_reached(c) && !kv_out_failed(c->out);
}

void kv_capture_finish(struct kv_capture *c)
{
	for (size_t i = 0; i < c->neps; i++) {
		struct kv_gapfill_io io = io_of(&c->eps[i]);
		kv_gapfill_finish(&c->eps[i].gf, &io);
	}
	kv_out_flush(c->out);
}

void kv_capture_print_stats(const struct kv_capture *c, FILE *f)
{
	for (size_t i = 0; i < c->neps; i++) {
		const struct endpoint *ep = &c->eps[i];
		char name[512];
		kv_printable(name, sizeof name, ep->src, strlen(ep->src));
		fprintf(f, "%s: %s: %llu messages, %llu bytes, %llu gaps, %llu %s, %llu replayed, "
			   "%llu restarts, %llu bad seq",
			kv_prog, name, (unsigned long long)ep->messages, (unsigned long long)ep->bytes,
			(unsigned long long)ep->gf.gaps, (unsigned long long)ep->gf.seq.missing,
			kv_seq_missing_words(ep->mooncake),
			(unsigned long long)ep->gf.replayed, (unsigned long long)ep->gf.seq.restarts,
			(unsigned long long)ep->bad_seq);
		if (ep->gf.duplicates)
			fprintf(f, ", %llu duplicates", (unsigned long long)ep->gf.duplicates);
		if (ep->oversize)
			fprintf(f, ", %llu oversized", (unsigned long long)ep->oversize);
		if (ep->replay_failures)
			fprintf(f, ", %llu replays refused by ZMQ", (unsigned long long)ep->replay_failures);
		if (ep->snapshots)
			fprintf(f, ", %llu snapshot replies not used", (unsigned long long)ep->snapshots);
		if (ep->behind)
			fprintf(f, ", %llu dropped (output behind)", (unsigned long long)ep->behind);
		fputc('\n', f);
	}
}

void kv_capture_print_progress(const struct kv_capture *c, FILE *f)
{
	uint64_t msgs = 0, bytes = 0, missing = 0;
	for (size_t i = 0; i < c->neps; i++) {
		msgs += c->eps[i].messages;
		bytes += c->eps[i].bytes;
		missing += c->eps[i].gf.seq.missing;
	}
	fprintf(f, "\r%s: %llu records, %llu messages, %llu bytes, %llu missing ", kv_prog,
		(unsigned long long)c->records, (unsigned long long)msgs, (unsigned long long)bytes,
		(unsigned long long)missing);
}

void kv_capture_free(struct kv_capture *c)
{
	for (size_t i = 0; i < c->neps; i++) {
		struct endpoint *ep = &c->eps[i];
		close_sub(ep);
		if (ep->dealer)
			zmq_close(ep->dealer);
		kv_gapfill_free(&ep->gf);
		free(ep->src);
		free(ep->replay_url);
	}
	free(c->eps);
	free(c->items);
	free(c->what);
	zmq_ctx_term(c->zctx);
	free(c);
}

bool kv_capture_write_metrics(const struct kv_capture *c, struct kv_metrics *m, struct kv_err *e)
{
	static const struct {
		const char *name, *help;
		size_t at;
	} counters[] = {
		{ "kvtools_sub_messages_total", "Messages received.", offsetof(struct endpoint, messages) },
		{ "kvtools_sub_bytes_total", "Bytes received, all frames.", offsetof(struct endpoint, bytes) },
		{ "kvtools_sub_gaps_total", "Runs of seqs found missing, whether replay filled them or not.",
		  offsetof(struct endpoint, gf.gaps) },
		{ "kvtools_sub_missing_batches_total", "Batches skipped in seq and not recovered by replay.",
		  offsetof(struct endpoint, gf.seq.missing) },
		{ "kvtools_sub_replayed_total", "Batches recovered from the replay socket.", offsetof(struct endpoint, gf.replayed) },
		{ "kvtools_sub_restarts_total", "Steps back in seq: publisher restarts.", offsetof(struct endpoint, gf.seq.restarts) },
		{ "kvtools_sub_bad_seq_total", "Messages of 3 frames or more whose seq frame is not 8 bytes.", offsetof(struct endpoint, bad_seq) },
		{ "kvtools_sub_oversized_total", "Messages not captured for their size: a frame over --max-message, "
		  "a record over 64 MiB or 64 frames.", offsetof(struct endpoint, oversize) },
		{ "kvtools_sub_dropped_total", "Messages dropped while 64 MiB or --hwm records waited for a slow reader.",
		  offsetof(struct endpoint, behind) },
	};
	if (!kv_metrics_begin(m, e))
		return false;
	for (size_t k = 0; k < sizeof counters / sizeof counters[0]; k++) {
		kv_metrics_family(m, counters[k].name, "counter", counters[k].help);
		for (size_t i = 0; i < c->neps; i++)
			kv_metrics_sample(m, counters[k].name,
					  (double)*(const uint64_t *)((const char *)&c->eps[i] + counters[k].at),
					  KV_LABELS("src", c->eps[i].src));
	}
	kv_metrics_family(m, "kvtools_sub_last_message_seconds", "gauge", "Unix time of the last message, 0 before any.");
	for (size_t i = 0; i < c->neps; i++)
		kv_metrics_sample(m, "kvtools_sub_last_message_seconds", (double)c->eps[i].last_ns / 1e9,
				  KV_LABELS("src", c->eps[i].src));
	kv_metrics_family(m, "kvtools_sub_records_total", "counter", "Records written to the capture.");
	/* those written, not those taken: a record in the buffer when the
	 * output fails is not in the capture */
	kv_metrics_sample(m, "kvtools_sub_records_total", (double)kv_out_records(c->out), NULL);
	return kv_metrics_commit(m, e);
}
