#include "net/capture.h"
#include "net/endpoint.h"
#include "decode/kvcap.h"
#include "base/metrics.h"
#include "net/replay.h"
#include "decode/seqtrack.h"
#include "decode/wire.h"
#include "base/utf8.h"
#include "base/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

/* A message kept in memory: held behind a replay, or brought by one. */
struct stored {
	uint64_t recv_ns;
	uint64_t seq;
	bool has_seq;
	size_t nframes;
	struct kv_frame frames[KV_CAP_MAX_FRAMES];
	uint8_t *bytes;
};

/* Bounds on what one endpoint keeps in memory while a replay runs; past
 * them the replay is cut short and the held messages are written. */
#define MAX_HELD 100000
#define MAX_HELD_BYTES (256u << 20)
#define MAX_DRAIN 1024

struct endpoint {
	char *src;
	void *sub;
	char *replay_url;
	struct kv_seqtrack seq;
	bool mooncake;          /* its last batch was a Mooncake master's: its seq counts events */
	uint64_t messages, bytes, replayed, bad_seq, duplicates, oversize, replay_failures;
	uint64_t behind;             /* dropped: KV_CAPTURE_MAX_HELD bytes already wait for a slow reader */
	/* replay in progress */
	void *dealer;
	bool replaying;
	uint64_t lo, hi, deadline_ns;
	struct stored *rep;
	size_t nrep, caprep, rep_bytes;
	/* messages held behind a replay, oldest first */
	struct stored *held;
	size_t head, nheld, capheld, held_bytes;
	uint64_t no_replay_at;       /* a gap ending here was already replayed once */
	bool dedup;                  /* seqs dedup_lo..dedup_upto came by replay: live copies are duplicates */
	uint64_t dedup_lo, dedup_upto;
	uint64_t last_ns;            /* wall time of its last message */
	uint8_t *topic;              /* last live topic, for rebuilding replayed records */
	size_t topic_len;
};

struct kv_capture {
	void *zctx;
	struct kv_out *out;
	struct kv_capture_opts opts;
	struct endpoint *eps;
	size_t neps, capeps;
	zmq_pollitem_t *items;
	size_t capitems;
	uint64_t held;               /* records written while the reader had not taken all */
	uint64_t records;
	bool stopping;
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
	return c;
}

static void set_int(void *s, int opt, int v)
{
	zmq_setsockopt(s, opt, &v, sizeof v);
}

static struct endpoint *find_ep(struct kv_capture *c, const char *src)
{
	for (size_t i = 0; i < c->neps; i++)
		if (strcmp(c->eps[i].src, src) == 0)
			return &c->eps[i];
	return NULL;
}

/* A replay endpoint is connected only when needed; this checks ZMQ accepts it. */
static bool replay_endpoint_ok(struct kv_capture *c, const char *url, char *err, size_t errlen)
{
	void *s = zmq_socket(c->zctx, ZMQ_DEALER);
	if (!s) {
		snprintf(err, errlen, "%s: cannot open a socket: %s", url, zmq_strerror(errno));
		return false;
	}
	set_int(s, ZMQ_LINGER, 0);
	int rc = zmq_connect(s, url);
	if (rc != 0)
		snprintf(err, errlen, "%s: invalid replay endpoint (%s)", url, zmq_strerror(errno));
	zmq_close(s);
	return rc == 0;
}

int kv_capture_add(struct kv_capture *c, const char *endpoint, const char *replay_endpoint,
		   char *err, size_t errlen)
{
	if (strlen(endpoint) > KV_CAP_MAX_SRC) {
		/* it would be every record's src, which readers refuse */
		snprintf(err, errlen, "%.64s...: endpoint longer than %u bytes", endpoint, KV_CAP_MAX_SRC);
		return KV_EX_USAGE;
	}
	const char *problem = c->opts.bind ? NULL : kv_endpoint_connect_problem(endpoint);
	if (problem) {
		snprintf(err, errlen, "%s: %s", endpoint, problem);
		return KV_EX_USAGE;
	}
	struct endpoint *dup = find_ep(c, endpoint);
	if (dup) {
		if (replay_endpoint && !dup->replay_url)
			return kv_capture_set_replay(c, endpoint, replay_endpoint, err, errlen) ? 0 : KV_EX_USAGE;
		return 0;
	}
	void *s = zmq_socket(c->zctx, ZMQ_SUB);
	if (!s) {
		snprintf(err, errlen, "%s: cannot open a socket after %zu endpoints: %s", endpoint, c->neps,
			 zmq_strerror(errno));
		return KV_EX_UNAVAILABLE;
	}
	set_int(s, ZMQ_LINGER, 0);
	set_int(s, ZMQ_RCVHWM, c->opts.hwm);
	int64_t maxmsg = KV_CAP_MAX_RECORD;
	zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
	if (c->opts.ntopics == 0)
		zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0);
	for (size_t i = 0; i < c->opts.ntopics; i++)
		zmq_setsockopt(s, ZMQ_SUBSCRIBE, c->opts.topics[i], strlen(c->opts.topics[i]));
	int rc = c->opts.bind ? zmq_bind(s, endpoint) : zmq_connect(s, endpoint);
	if (rc != 0) {
		int e = errno;
		zmq_close(s);
		bool usage = e == EINVAL || e == EPROTONOSUPPORT || e == ENOCOMPATPROTO || e == ENODEV;
		snprintf(err, errlen, "%s: cannot %s: %s", endpoint, c->opts.bind ? "bind" : "connect",
			 zmq_strerror(e));
		return usage ? KV_EX_USAGE : KV_EX_UNAVAILABLE;
	}
	c->eps = kv_xgrow(c->eps, &c->capeps, c->neps + 1, sizeof *c->eps);
	struct endpoint *ep = &c->eps[c->neps++];
	memset(ep, 0, sizeof *ep);
	ep->src = kv_xstrdup(endpoint);
	ep->sub = s;
	if (replay_endpoint && !kv_capture_set_replay(c, endpoint, replay_endpoint, err, errlen))
		return KV_EX_USAGE;
	return 0;
}

bool kv_capture_set_replay(struct kv_capture *c, const char *src, const char *replay_endpoint,
			   char *err, size_t errlen)
{
	struct endpoint *ep = find_ep(c, src);
	if (!ep) {
		snprintf(err, errlen, "%s: --replay names an endpoint that is not captured", src);
		return false;
	}
	if (!replay_endpoint_ok(c, replay_endpoint, err, errlen))
		return false;
	free(ep->replay_url);
	ep->replay_url = kv_xstrdup(replay_endpoint);
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
	kv_out_flush_if_full(c->out);
	c->records++;
}

static void store_copy(struct stored *s, uint64_t recv_ns, const struct kv_frame *frames, size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += frames[i].n;
	s->recv_ns = recv_ns;
	s->nframes = n;
	s->bytes = kv_xmalloc(total);
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		if (frames[i].n)
			memcpy(s->bytes + off, frames[i].p, frames[i].n);
		s->frames[i].p = s->bytes + off;
		s->frames[i].n = frames[i].n;
		off += frames[i].n;
	}
	struct kv_msg_parts parts;
	kv_msg_split(s->frames, n, &parts);
	s->has_seq = parts.has_seq;
	s->seq = parts.seq;
}

static void remember_topic(struct endpoint *ep, struct kv_frame topic)
{
	if (topic.n == ep->topic_len && (topic.n == 0 || memcmp(topic.p, ep->topic, topic.n) == 0))
		return;
	free(ep->topic);
	ep->topic = kv_xmalloc(topic.n ? topic.n : 1);
	if (topic.n)
		memcpy(ep->topic, topic.p, topic.n);
	ep->topic_len = topic.n;
}

/* Asks for batches [lo, hi); false (nothing asked) when ZMQ refuses. */
static bool start_replay(struct kv_capture *c, struct endpoint *ep, uint64_t lo, uint64_t hi)
{
	ep->dealer = zmq_socket(c->zctx, ZMQ_DEALER);
	if (!ep->dealer)
		return false;
	set_int(ep->dealer, ZMQ_LINGER, 0);
	set_int(ep->dealer, ZMQ_RCVHWM, 0);
	uint8_t seqbuf[8];
	struct kv_frame req[2];
	kv_replay_request(lo, seqbuf, req);
	if (zmq_connect(ep->dealer, ep->replay_url) != 0 ||
	    zmq_send(ep->dealer, req[0].p, 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
	    zmq_send(ep->dealer, req[1].p, req[1].n, ZMQ_DONTWAIT) < 0) {
		zmq_close(ep->dealer);
		ep->dealer = NULL;
		ep->replay_failures++;
		return false;
	}
	ep->replaying = true;
	ep->lo = lo;
	ep->hi = hi;
	ep->deadline_ns = kv_monotonic_ns() + c->opts.replay_timeout_ns;
	return true;
}

/* Delivers one message in order; false when it must wait behind a replay
 * (the caller keeps it).  The live copy of a batch that a replay already
 * brought can arrive after the replay ended (two connections): until the
 * first live seq beyond the replayed range, such a seq is a duplicate, not
 * a publisher restart. */
static bool deliver(struct kv_capture *c, struct endpoint *ep, uint64_t recv_ns,
		    const struct kv_frame *frames, size_t n)
{
	if (ep->replaying)
		return false;
	struct kv_msg_parts parts;
	kv_msg_split(frames, n, &parts);
	remember_topic(ep, parts.topic);
	if (!parts.has_seq) {
		/* [topic, payload] and bare payloads carry no seq: nothing bad */
		ep->bad_seq += parts.seq_frame;
		write_record(c, ep, recv_ns, 0, frames, n);
		return true;
	}
	if (ep->dedup) {
		if (parts.seq >= ep->dedup_lo && parts.seq <= ep->dedup_upto) {
			ep->duplicates++;
			return true;
		}
		ep->dedup = false;
	}
	if (ep->replay_url && !c->stopping && ep->seq.seen && parts.seq > ep->seq.last + 1 &&
	    parts.seq != ep->no_replay_at) {
		ep->no_replay_at = parts.seq;
		if (start_replay(c, ep, ep->seq.last + 1, parts.seq))
			return false;
	}
	ep->mooncake = kv_wire_is_mooncake_batch(parts.payload.p, parts.payload.n);
	kv_seq_observe(&ep->seq, parts.seq);
	write_record(c, ep, recv_ns, 0, frames, n);
	return true;
}

static void free_stored(struct stored *s)
{
	free(s->bytes);
	s->bytes = NULL;
}

static void drain_held(struct kv_capture *c, struct endpoint *ep)
{
	while (ep->nheld > 0) {
		struct stored *s = &ep->held[ep->head];
		if (!deliver(c, ep, s->recv_ns, s->frames, s->nframes))
			return;
		for (size_t i = 0; i < s->nframes; i++)
			ep->held_bytes -= s->frames[i].n;
		free_stored(s);
		ep->head++;
		ep->nheld--;
	}
	ep->head = 0;
}

static void hold(struct endpoint *ep, uint64_t recv_ns, const struct kv_frame *frames, size_t n)
{
	if (ep->head > 0 && ep->head + ep->nheld == ep->capheld) {
		memmove(ep->held, ep->held + ep->head, ep->nheld * sizeof *ep->held);
		ep->head = 0;
	}
	ep->held = kv_xgrow(ep->held, &ep->capheld, ep->head + ep->nheld + 1, sizeof *ep->held);
	store_copy(&ep->held[ep->head + ep->nheld], recv_ns, frames, n);
	ep->nheld++;
	for (size_t i = 0; i < n; i++)
		ep->held_bytes += frames[i].n;
}

static int by_seq(const void *a, const void *b)
{
	const struct stored *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The seqs a replay is trusted for end before this one: the seq whose gap
 * it fills, or (--replay-from asks for no end) the first live seq that
 * waited behind it; what the live stream brings is never taken from a
 * replay, which could drop it later as a duplicate. */
static uint64_t replay_end(const struct endpoint *ep)
{
	const struct stored *first = ep->nheld ? &ep->held[ep->head] : NULL;
	return first && first->has_seq && first->seq < ep->hi ? first->seq : ep->hi;
}

/* Ends the replay: writes what it brought (in seq order, flagged), then
 * whatever waited behind it. */
static void finish_replay(struct kv_capture *c, struct endpoint *ep)
{
	zmq_close(ep->dealer);
	ep->dealer = NULL;
	ep->replaying = false;
	if (ep->nrep) /* a replay nobody answered brought nothing, and rep may be NULL */
		qsort(ep->rep, ep->nrep, sizeof *ep->rep, by_seq);
	uint64_t end = replay_end(ep);
	for (size_t i = 0; i < ep->nrep; i++) {
		struct stored *s = &ep->rep[i];
		if ((!ep->seq.seen || s->seq > ep->seq.last) && s->seq < end) {
			kv_seq_observe(&ep->seq, s->seq);
			ep->replayed++;
			write_record(c, ep, s->recv_ns, KV_CAP_FLAG_REPLAYED, s->frames, s->nframes);
			if (!ep->dedup)
				ep->dedup_lo = s->seq;
			ep->dedup = true;
			ep->dedup_upto = s->seq;
		}
		free_stored(s);
	}
	ep->nrep = 0;
	ep->rep_bytes = 0;
	drain_held(c, ep);
}

static void take_replay_reply(struct endpoint *ep, const struct kv_frame *frames, size_t n,
			      uint64_t recv_ns, bool *done)
{
	struct kv_replay_reply r;
	kv_replay_parse_reply(frames, n, &r);
	if (r.kind == KV_REPLAY_END_MARK) {
		*done = true;
		return;
	}
	if (r.kind != KV_REPLAY_BATCH || r.seq < ep->lo || r.seq >= ep->hi)
		return;
	/* A replay buffer is consecutive batches: after the first reply (which
	 * may start later than asked), one that is not the next seq is no
	 * part of it. */
	if (ep->nrep > 0 && r.seq != ep->rep[ep->nrep - 1].seq + 1)
		return;
	uint8_t seqbuf[8];
	kv_seq_encode(r.seq, seqbuf);
	struct kv_frame rebuilt[3] = {
		r.has_topic ? r.topic : (struct kv_frame){ ep->topic, ep->topic_len },
		{ seqbuf, 8 },
		r.payload,
	};
	ep->rep = kv_xgrow(ep->rep, &ep->caprep, ep->nrep + 1, sizeof *ep->rep);
	store_copy(&ep->rep[ep->nrep++], recv_ns, rebuilt, 3);
	ep->rep_bytes += rebuilt[0].n + rebuilt[1].n + rebuilt[2].n;
	/* What a replay brings is bounded like what waits behind it. */
	if (ep->nrep >= MAX_HELD || ep->rep_bytes >= MAX_HELD_BYTES)
		*done = true;
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

static void on_live(struct kv_capture *c, struct endpoint *ep, const struct kv_frame *frames, size_t n,
		    uint64_t bytes)
{
	uint64_t now = kv_realtime_ns();
	ep->last_ns = now;
	ep->messages++;
	ep->bytes += bytes;
	if (ep->replaying || ep->nheld > 0) {
		hold(ep, now, frames, n);
		if (ep->replaying && (ep->nheld >= MAX_HELD || ep->held_bytes >= MAX_HELD_BYTES))
			finish_replay(c, ep);
		return;
	}
	if (!deliver(c, ep, now, frames, n))
		hold(ep, now, frames, n);
}

/* Reads what a socket has ready, at most MAX_DRAIN messages (fairness). */
static void drain_socket(struct kv_capture *c, struct endpoint *ep, bool replay_socket)
{
	zmq_msg_t msgs[KV_CAP_MAX_FRAMES + 1];
	struct kv_frame frames[KV_CAP_MAX_FRAMES];
	for (int k = 0; k < MAX_DRAIN && !limit_reached(c); k++) {
		bool over, done = false;
		size_t n = recv_message(replay_socket ? ep->dealer : ep->sub, msgs, &over);
		if (n == 0)
			return;
		uint64_t bytes;
		frames_of(msgs, n, frames, &bytes);
		if (over)
			ep->oversize++;
		else if (replay_socket)
			take_replay_reply(ep, frames, n, kv_realtime_ns(), &done);
		else
			on_live(c, ep, frames, n, bytes);
		for (size_t i = 0; i < n; i++)
			zmq_msg_close(&msgs[i]);
		if (done) {
			finish_replay(c, ep);
			return;
		}
	}
}

void kv_capture_start(struct kv_capture *c)
{
	if (!c->opts.replay_from_set)
		return;
	for (size_t i = 0; i < c->neps; i++)
		if (c->eps[i].replay_url)
			start_replay(c, &c->eps[i], c->opts.replay_from, UINT64_MAX);
}

static void expire_replays(struct kv_capture *c)
{
	uint64_t now = kv_monotonic_ns();
	for (size_t i = 0; i < c->neps; i++)
		if (c->eps[i].replaying && now >= c->eps[i].deadline_ns)
			finish_replay(c, &c->eps[i]);
}

static size_t build_pollset(struct kv_capture *c)
{
	c->items = kv_xgrow(c->items, &c->capitems, 2 * c->neps + 1, sizeof *c->items);
	size_t k = 0;
	for (size_t i = 0; i < c->neps; i++) {
		c->items[k++] = (zmq_pollitem_t){ .socket = c->eps[i].sub, .events = ZMQ_POLLIN };
		if (c->eps[i].dealer)
			c->items[k++] = (zmq_pollitem_t){ .socket = c->eps[i].dealer, .events = ZMQ_POLLIN };
	}
	/* last: a slow reader's output, when bytes wait for it */
	if (c->out->nonblock && c->out->len)
		c->items[k++] = (zmq_pollitem_t){ .fd = c->out->fd, .events = ZMQ_POLLOUT };
	return k;
}

static int poll_once(struct kv_capture *c, size_t n, long timeout_ms)
{
	int rc = zmq_poll(c->items, (int)n, timeout_ms);
	return rc < 0 ? 0 : rc;
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
	if (ready > 0 && n > 0 && c->items[n - 1].socket == NULL && (c->items[n - 1].revents & ZMQ_POLLOUT))
		kv_out_flush(c->out);
	if (ready > 0) {
		size_t k = 0;
		for (size_t i = 0; i < c->neps; i++) {
			struct endpoint *ep = &c->eps[i];
			bool had_dealer = ep->dealer != NULL;
			short sub_ready = c->items[k++].revents;
			short dealer_ready = had_dealer ? c->items[k++].revents : 0;
			if (dealer_ready & ZMQ_POLLIN)
				drain_socket(c, ep, true);
			if (sub_ready & ZMQ_POLLIN)
				drain_socket(c, ep, false);
		}
	}
	expire_replays(c);
	return !limit_reached(c) && !kv_out_failed(c->out);
}

void kv_capture_finish(struct kv_capture *c)
{
	c->stopping = true;
	for (size_t i = 0; i < c->neps; i++) {
		struct endpoint *ep = &c->eps[i];
		if (ep->replaying)
			finish_replay(c, ep);
		drain_held(c, ep);
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
			(unsigned long long)ep->seq.gaps, (unsigned long long)ep->seq.missing,
			kv_seq_missing_words(ep->mooncake),
			(unsigned long long)ep->replayed, (unsigned long long)ep->seq.restarts,
			(unsigned long long)ep->bad_seq);
		if (ep->duplicates)
			fprintf(f, ", %llu duplicates", (unsigned long long)ep->duplicates);
		if (ep->oversize)
			fprintf(f, ", %llu oversized", (unsigned long long)ep->oversize);
		if (ep->replay_failures)
			fprintf(f, ", %llu replays refused by ZMQ", (unsigned long long)ep->replay_failures);
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
		missing += c->eps[i].seq.missing;
	}
	fprintf(f, "\r%s: %llu records, %llu messages, %llu bytes, %llu missing ", kv_prog,
		(unsigned long long)c->records, (unsigned long long)msgs, (unsigned long long)bytes,
		(unsigned long long)missing);
}

void kv_capture_free(struct kv_capture *c)
{
	for (size_t i = 0; i < c->neps; i++) {
		struct endpoint *ep = &c->eps[i];
		zmq_close(ep->sub);
		if (ep->dealer)
			zmq_close(ep->dealer);
		for (size_t j = 0; j < ep->nheld; j++)
			free_stored(&ep->held[ep->head + j]);
		for (size_t j = 0; j < ep->nrep; j++)
			free_stored(&ep->rep[j]);
		free(ep->held);
		free(ep->rep);
		free(ep->src);
		free(ep->replay_url);
		free(ep->topic);
	}
	free(c->eps);
	free(c->items);
	zmq_ctx_term(c->zctx);
	free(c);
}

bool kv_capture_write_metrics(const struct kv_capture *c, struct kv_metrics *m)
{
	static const struct {
		const char *name, *help;
		size_t at;
	} counters[] = {
		{ "kvtools_sub_messages_total", "Messages received.", offsetof(struct endpoint, messages) },
		{ "kvtools_sub_bytes_total", "Bytes received, all frames.", offsetof(struct endpoint, bytes) },
		{ "kvtools_sub_gaps_total", "Jumps forward in seq.", offsetof(struct endpoint, seq.gaps) },
		{ "kvtools_sub_missing_batches_total", "Batches skipped in seq and not recovered by replay.",
		  offsetof(struct endpoint, seq.missing) },
		{ "kvtools_sub_replayed_total", "Batches recovered from the replay socket.", offsetof(struct endpoint, replayed) },
		{ "kvtools_sub_restarts_total", "Steps back in seq: publisher restarts.", offsetof(struct endpoint, seq.restarts) },
		{ "kvtools_sub_bad_seq_total", "Messages of 3 frames or more whose seq frame is not 8 bytes.", offsetof(struct endpoint, bad_seq) },
	};
	if (!kv_metrics_begin(m))
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
	kv_metrics_sample(m, "kvtools_sub_records_total", (double)c->records, NULL);
	return kv_metrics_commit(m);
}
