#include "nats/js.h"
#include "base/jsonw.h"
#include "base/out.h"
#include "base/util.h"

#include <jansson.h>
#include <nats/nats.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Async publishes in flight before js_PublishMsgAsync waits. */
#define MAX_IN_FLIGHT 4096
/* An async publish not acknowledged within this is handed back for a retry. */
#define ACK_WAIT_MS 5000
#define API_WAIT_MS 5000
/* How long the connection may take to drain before the library is torn down. */
#define DRAIN_WAIT_MS 5000
/* What one fetch may bring at most, whatever its count: memory stays bounded
 * with records of up to a server's max_payload each. */
#define FETCH_MAX_BYTES (64 << 20)

struct kv_js {
	natsOptions *no;
	natsConnection *nc;
	jsCtx *js;
	char *servers;
	uint64_t retry_ns;         /* how long a publish is retried, and a request asked again */
	bool given_up;             /* one was lost: the others are not retried */
	char *header_subject;      /* messages on it are headers, the others records */
	pthread_mutex_t mu;        /* guards st and retry: acks arrive on a libnats thread */
	struct kv_js_pub_stats st;
	natsMsg **retry;
	size_t nretry, capretry;
	struct kv_js_hold *hold;   /* the durable this kvnats holds, if any */
};

struct kv_js_sub {
	struct kv_js *k;
	natsSubscription *sub;
	natsMsgList list;
	natsMsg *last;             /* the last message of list handed out: acknowledging it acknowledges all */
	struct kv_js_msg *msgs;
	size_t capmsgs;
	bool ack;
	bool ephemeral;            /* deleted at the end: nobody can resume it */
	char *stream, *name, *filter;
	/* Delivery in order, as nats.go's ordered consumer: a message whose
	 * consumer sequence skips one means a delivery was lost (a pull
	 * request that expired on the way, a server that went away); the
	 * consumer is then made again after the last message handed out. */
	uint64_t last_cseq, last_sseq;
	uint64_t start;            /* the consumer's last delivered stream sequence when bound */
	bool restart;
	uint64_t restarts;
};

static void hold_free(struct kv_js_hold *h);

/* libnats's own words for a failure: the JetStream error when there is one. */
static const char *why(natsStatus s)
{
	natsStatus last;
	const char *text = nats_GetLastError(&last);
	return text && *text ? text : natsStatus_GetText(s);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* A request JetStream did not serve is asked again while the retry time
 * lasts when it may be served later: it timed out (a server that died, a
 * cluster electing the leaders of its streams and consumers), nobody
 * answered it (a server still starting), or JetStream said it is not
 * available yet.  What it refused for good (no such stream, a bad request)
 * is not asked again. */
struct again {
	uint64_t deadline;
	unsigned delay_ms;
};

static struct again again_begin(const struct kv_js *k)
{
	return (struct again){ kv_monotonic_ns() + k->retry_ns, 100 };
}

static bool transient(natsStatus s, jsErrCode jerr)
{
	return s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS || s == NATS_CONNECTION_DISCONNECTED ||
	       jerr == JSClusterNotAvailErr || jerr == JSClusterNotLeaderErr;
}

/* After a request that failed: whether to ask again (having waited a little). */
static bool ask_again(struct again *a, natsStatus s, jsErrCode jerr)
{
	if (s == NATS_OK || !transient(s, jerr) || kv_monotonic_ns() + a->delay_ms * 1000000ull > a->deadline)
		return false;
	sleep_ms(a->delay_ms);
	a->delay_ms = a->delay_ms < 1000 ? a->delay_ms * 2 : 1000;
	return true;
}

/* The counts of the kind of message m is (k->mu held). */
static struct kv_js_pub_counts *counts_of(struct kv_js *k, natsMsg *m)
{
	const char *subject = natsMsg_GetSubject(m);
	bool header = k->header_subject && subject && strcmp(subject, k->header_subject) == 0;
	return header ? &k->st.headers : &k->st.records;
}

static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
	(void)js;
	struct kv_js *k = closure;
	pthread_mutex_lock(&k->mu);
	struct kv_js_pub_counts *c = counts_of(k, msg);
	if (pa) {
		if (pa->Duplicate)
			c->duplicates++;
		else
			c->stored++;
		natsMsg_Destroy(msg);
	} else {
		/* kept for kv_js_publish to retry, on the main thread */
		k->retry = kv_xgrow(k->retry, &k->capretry, k->nretry + 1, sizeof *k->retry); // NOLINT(bugprone-sizeof-expression)
		k->retry[k->nretry++] = msg;
		c->retried++;
		snprintf(k->st.last_error, sizeof k->st.last_error, "%s",
			 pae && pae->ErrText ? pae->ErrText : natsStatus_GetText(pae ? pae->Err : NATS_ERR));
	}
	pthread_mutex_unlock(&k->mu);
}

/* Set by libnats's closed callback, which runs on a thread of its own and
 * may come late: static, so that it never outlives what it writes to (one
 * connection per process). */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool closed;
} conn_closed = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void on_closed(natsConnection *nc, void *closure)
{
	(void)nc;
	(void)closure;
	pthread_mutex_lock(&conn_closed.mu);
	conn_closed.closed = true;
	pthread_cond_broadcast(&conn_closed.cv);
	pthread_mutex_unlock(&conn_closed.mu);
}

bool kv_js_connect(struct kv_js **out, const char *servers, struct kv_err *e)
{
	struct kv_js *k = kv_xcalloc(1, sizeof *k);
	pthread_mutex_init(&k->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&conn_closed.cv, &ca);
	pthread_condattr_destroy(&ca);
	k->servers = kv_xstrdup(servers);
	k->retry_ns = KV_JS_RETRY_NS;
	*out = k;
	const char *urls[64];
	int n = 0;
	char *copy = kv_xstrdup(servers), *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t && n < 64; t = strtok_r(NULL, ",", &save))
		urls[n++] = t;
	natsStatus s = natsOptions_Create(&k->no);
	if (s == NATS_OK)
		s = natsOptions_SetServers(k->no, urls, n);
	free(copy);
	if (s == NATS_OK)
		s = natsOptions_SetNoRandomize(k->no, true);
	if (s == NATS_OK)
		s = natsOptions_SetTimeout(k->no, 2000);
	/* a server of a cluster going away is a reconnection, not an end */
	if (s == NATS_OK)
		s = natsOptions_SetMaxReconnect(k->no, 240);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectWait(k->no, 250);
	if (s == NATS_OK)
		s = natsOptions_SetClosedCB(k->no, on_closed, NULL);
	if (s == NATS_OK)
		s = natsConnection_Connect(&k->nc, k->no);
	if (s != NATS_OK)
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: cannot connect: %s", servers,
				  s == NATS_NO_SERVER ? "no server answers" : why(s));
	jsOptions jo;
	jsOptions_Init(&jo);
	jo.Wait = API_WAIT_MS;
	jo.PublishAsync.MaxPending = MAX_IN_FLIGHT;
	jo.PublishAsync.AckHandler = on_ack;
	jo.PublishAsync.AckHandlerClosure = k;
	jo.PublishAsync.StallWait = 1000;
	s = natsConnection_JetStream(&k->js, k->nc, &jo);
	if (s != NATS_OK)
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: JetStream: %s", servers, why(s));
	return true;
}

/* Drains the connection and waits (bounded) until it is closed.  libnats
 * 3.4 frees a received message through its garbage collector, and the
 * collector is the first thing nats_CloseAndWait stops: a message that a
 * subscription's thread frees after that is lost.  JetStream's reply
 * subscription frees each publish acknowledgement after the acknowledgement
 * handler returns, and js_PublishAsyncComplete returns as soon as the last
 * handler did, so without this the last acknowledgement could be freed
 * after the collector was gone (a leak that LeakSanitizer reports now and
 * then).  A drain ends only once every subscription has delivered and freed
 * what it received and removed itself, so nothing is freed after it. */
static void drain(struct kv_js *k)
{
	/* no drain while reconnecting or once closed: closed as it is */
	if (natsConnection_DrainTimeout(k->nc, DRAIN_WAIT_MS) != NATS_OK)
		natsConnection_Close(k->nc);
	/* the drain closes the connection itself, at its timeout at the latest */
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += DRAIN_WAIT_MS / 1000 + 2;
	pthread_mutex_lock(&conn_closed.mu);
	while (!conn_closed.closed && pthread_cond_timedwait(&conn_closed.cv, &conn_closed.mu, &until) == 0)
		;
	pthread_mutex_unlock(&conn_closed.mu);
}

void kv_js_close(struct kv_js *k)
{
	if (!k)
		return;
	if (k->nc)
		drain(k);
	for (size_t i = 0; i < k->nretry; i++)
		natsMsg_Destroy(k->retry[i]);
	free(k->retry);
	jsCtx_Destroy(k->js);
	hold_free(k->hold);
	if (k->nc)
		natsConnection_Close(k->nc);
	natsConnection_Destroy(k->nc);
	natsOptions_Destroy(k->no);
	pthread_mutex_destroy(&k->mu);
	free(k->header_subject);
	free(k->servers);
	free(k);
	/* the library's threads and memory, so that leak checkers see none */
	nats_CloseAndWait(2000);
}

static bool stream_missing(natsStatus s, jsErrCode jerr)
{
	return s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr;
}

/* The stream's state; false with *missing when there is no such stream
 * (e untouched), or with e (69) when the servers fail. */
static bool stream_state(struct kv_js *k, const char *name, struct kv_js_stream_state *st, bool *missing,
			 struct kv_err *e)
{
	jsStreamInfo *si = NULL;
	jsErrCode jerr;
	natsStatus s;
	struct again a = again_begin(k);
	do {
		jerr = 0;
		s = js_GetStreamInfo(&si, k->js, name, NULL, &jerr);
	} while (ask_again(&a, s, jerr));
	*missing = stream_missing(s, jerr);
	if (*missing)
		return false;
	if (s != NATS_OK)
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: stream %s: %s", k->servers, name, why(s));
	st->first = si->State.FirstSeq;
	st->last = si->State.LastSeq;
	st->created_ns = si->Created;
	st->replicas = si->Config ? si->Config->Replicas : 1;
	jsStreamInfo_Destroy(si);
	return true;
}

bool kv_js_stream_state(struct kv_js *k, const char *name, struct kv_js_stream_state *st, struct kv_err *e)
{
	bool missing;
	if (stream_state(k, name, st, &missing, e))
		return true;
	return missing ? kv_err_set(e, KV_EX_NOINPUT, "%s: no stream %s", k->servers, name) : false;
}

bool kv_js_ensure_stream(struct kv_js *k, const struct kv_js_stream_opts *o, bool *created, struct kv_err *e)
{
	struct kv_js_stream_state st;
	bool missing;
	*created = false;
	if (stream_state(k, o->name, &st, &missing, e))
		return true;
	if (!missing)
		return false;
	jsStreamConfig cfg;
	jsStreamConfig_Init(&cfg);
	const char *subjects[1] = { o->subjects };
	cfg.Name = o->name;
	cfg.Subjects = subjects;
	cfg.SubjectsLen = 1;
	cfg.Storage = js_FileStorage;
	cfg.Replicas = o->replicas;
	cfg.MaxAge = o->max_age_ns;
	cfg.MaxBytes = o->max_bytes;
	cfg.Duplicates = o->dup_window_ns;
	jsStreamInfo *si = NULL;
	jsErrCode jerr;
	natsStatus s;
	struct again a = again_begin(k);
	do {
		jerr = 0;
		jsStreamInfo_Destroy(si);
		si = NULL;
		s = js_AddStream(&si, k->js, &cfg, NULL, &jerr);
	} while (ask_again(&a, s, jerr));
	jsStreamInfo_Destroy(si);
	if (s == NATS_OK) {
		*created = true;
		return true;
	}
	if (jerr == JSStreamNameExistErr) /* another producer created it meanwhile */
		return true;
	return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: cannot create stream %s: %s", k->servers, o->name, why(s));
}

/* ---- publishing ---- */

void kv_js_set_retry(struct kv_js *k, uint64_t ns)
{
	k->retry_ns = ns;
}

void kv_js_set_header_subject(struct kv_js *k, const char *subject)
{
	free(k->header_subject);
	k->header_subject = kv_xstrdup(subject);
}

/* One message, synchronously, until it is acknowledged or the retry time
 * has passed; takes the message. */
static bool publish_until_acked(struct kv_js *k, natsMsg *m)
{
	uint64_t deadline = kv_monotonic_ns() + k->retry_ns;
	unsigned delay = 50;
	for (;;) {
		jsPubOptions po;
		jsPubOptions_Init(&po);
		po.MaxWait = 2000;
		jsPubAck *pa = NULL;
		jsErrCode jerr = 0;
		natsStatus s = js_PublishMsg(&pa, k->js, m, &po, &jerr);
		pthread_mutex_lock(&k->mu);
		struct kv_js_pub_counts *c = counts_of(k, m);
		if (s == NATS_OK) {
			if (pa->Duplicate)
				c->duplicates++;
			else
				c->stored++;
		} else {
			snprintf(k->st.last_error, sizeof k->st.last_error, "%s", why(s));
		}
		bool lost = s != NATS_OK && (k->given_up || kv_monotonic_ns() > deadline);
		c->lost += lost;
		k->given_up |= lost;
		pthread_mutex_unlock(&k->mu);
		jsPubAck_Destroy(pa);
		if (s == NATS_OK || lost) {
			natsMsg_Destroy(m);
			return s == NATS_OK;
		}
		sleep_ms(delay);
		delay = delay < 1000 ? delay * 2 : 1000;
	}
}

/* Publishes again what the server refused or never acknowledged. */
static bool retry_refused(struct kv_js *k)
{
	pthread_mutex_lock(&k->mu);
	natsMsg **v = k->retry;
	size_t n = k->nretry;
	k->retry = NULL;
	k->nretry = k->capretry = 0;
	pthread_mutex_unlock(&k->mu);
	bool ok = true;
	for (size_t i = 0; i < n; i++)
		ok &= publish_until_acked(k, v[i]);
	free(v);
	return ok;
}

bool kv_js_publish(struct kv_js *k, const char *subject, const char *msg_id, const void *data, size_t n)
{
	bool ok = retry_refused(k);
	natsMsg *m = NULL;
	if (natsMsg_Create(&m, subject, NULL, data, (int)n) != NATS_OK)
		kv_die(KV_EX_SOFTWARE, "out of memory");
	natsMsgHeader_Set(m, "Nats-Msg-Id", msg_id);
	jsPubOptions po;
	jsPubOptions_Init(&po);
	po.MaxWait = ACK_WAIT_MS;
	pthread_mutex_lock(&k->mu);
	counts_of(k, m)->published++;
	pthread_mutex_unlock(&k->mu);
	uint64_t deadline = kv_monotonic_ns() + k->retry_ns;
	for (;;) {
		natsStatus s = js_PublishMsgAsync(k->js, &m, &po);
		if (s == NATS_OK)
			return ok;
		/* NATS_TIMEOUT: MAX_IN_FLIGHT are waiting; others: the connection */
		ok &= retry_refused(k);
		if (s != NATS_TIMEOUT || kv_monotonic_ns() > deadline) {
			pthread_mutex_lock(&k->mu);
			counts_of(k, m)->retried++;
			pthread_mutex_unlock(&k->mu);
			return publish_until_acked(k, m) && ok;
		}
	}
}

bool kv_js_publish_finish(struct kv_js *k, struct kv_js_pub_stats *st)
{
	bool ok = true;
	for (;;) {
		ok &= retry_refused(k);
		jsPubOptions po;
		jsPubOptions_Init(&po);
		po.MaxWait = ACK_WAIT_MS + 1000;
		natsStatus s = js_PublishAsyncComplete(k->js, &po);
		if (s != NATS_OK) {
			natsMsgList pending = { 0 };
			if (js_PublishAsyncGetPendingList(&pending, k->js) == NATS_OK) {
				for (int i = 0; i < pending.Count; i++) {
					pthread_mutex_lock(&k->mu);
					counts_of(k, pending.Msgs[i])->retried++;
					pthread_mutex_unlock(&k->mu);
					ok &= publish_until_acked(k, pending.Msgs[i]);
					pending.Msgs[i] = NULL;
				}
				natsMsgList_Destroy(&pending);
			}
		}
		pthread_mutex_lock(&k->mu);
		bool more = k->nretry > 0;
		pthread_mutex_unlock(&k->mu);
		if (s == NATS_OK && !more)
			break;
	}
	pthread_mutex_lock(&k->mu);
	*st = k->st;
	pthread_mutex_unlock(&k->mu);
	return ok && st->records.lost == 0 && st->headers.lost == 0;
}

/* ---- consuming ---- */

/* One kvnats at a time on a durable.  Two pulling from one consumer share
 * its messages between them, each starting the consumer again at every gap
 * the other makes: duplicates, failures and hangs.  JetStream (2.9) has no
 * owner for a pull consumer, so kvnats holds a durable by answering on a
 * subject of its own for it (HOLD_PREFIX.STREAM.DURABLE) for as long as its
 * connection lives (a killed kvnats lets go at once: the server closes its
 * connection).  One that means to take a durable subscribes there, waits
 * for its interest to reach the cluster, and asks who is there: it gives up
 * when one answers that it holds the durable, or that it is taking it too
 * and drew a smaller number (each draws one at random); and one taking it
 * gives up when asked by one with a smaller number.  Of any that overlap
 * in time, the one with the smallest number takes it. */
#define HOLD_PREFIX "_KVNATS.DURABLE"
#define HOLD_SETTLE_MS 100
#define HOLD_WINDOW_MS 500

enum hold_state { HOLD_TAKING, HOLD_HELD, HOLD_LOST };

struct kv_js_hold {
	pthread_mutex_t mu;
	enum hold_state state;
	unsigned long long number;
	natsSubscription *sub;
	char subject[600];
};

static unsigned long long draw_number(void)
{
	unsigned long long n = 0;
	if (getrandom(&n, sizeof n, 0) != (ssize_t)sizeof n)
		n = kv_realtime_ns() ^ (unsigned long long)getpid() << 40;
	return n ? n : 1;
}

/* The text of a message, NUL-terminated, at most n - 1 bytes of it. */
static void message_text(natsMsg *m, char *buf, size_t n)
{
	int len = natsMsg_GetDataLength(m);
	size_t k = len > 0 ? (size_t)len : 0;
	if (k >= n)
		k = n - 1;
	memcpy(buf, natsMsg_GetData(m), k);
	buf[k] = 0;
}

/* "WORD N": the word and the number; false for anything else. */
static bool word_number(const char *text, char *word, size_t size, unsigned long long *n)
{
	const char *sp = strchr(text, ' ');
	uint64_t v;
	if (!sp || (size_t)(sp - text) >= size || !kv_parse_u64(sp + 1, 0, UINT64_MAX, &v))
		return false;
	memcpy(word, text, (size_t)(sp - text));
	word[sp - text] = 0;
	*n = v;
	return true;
}

/* "who N" asked by another: our state and number (libnats's thread). */
static void on_hold_question(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
	(void)sub;
	struct kv_js_hold *h = closure;
	char text[64], word[16], answer[64];
	unsigned long long theirs;
	message_text(msg, text, sizeof text);
	const char *reply = natsMsg_GetReply(msg);
	if (reply && word_number(text, word, sizeof word, &theirs) && strcmp(word, "who") == 0 && theirs != h->number) {
		pthread_mutex_lock(&h->mu);
		if (h->state == HOLD_TAKING && theirs < h->number)
			h->state = HOLD_LOST;
		snprintf(answer, sizeof answer, "%s %llu", h->state == HOLD_HELD ? "held" : "taking", h->number);
		pthread_mutex_unlock(&h->mu);
		natsConnection_PublishString(nc, reply, answer);
	}
	natsMsg_Destroy(msg);
}

/* Whether an answer to our question says another has the durable, or has
 * a better claim to it. */
static bool another_has_it(natsMsg *m, unsigned long long ours)
{
	char text[64], word[16];
	unsigned long long theirs;
	message_text(m, text, sizeof text);
	if (!word_number(text, word, sizeof word, &theirs) || theirs == ours)
		return false;
	return strcmp(word, "held") == 0 || (strcmp(word, "taking") == 0 && theirs < ours);
}

/* Asks who is on the durable; true when another has it. */
static bool ask_who_holds(struct kv_js *k, struct kv_js_hold *h)
{
	natsInbox *inbox = NULL;
	natsSubscription *answers = NULL;
	char question[64];
	snprintf(question, sizeof question, "who %llu", h->number);
	bool other = false;
	if (natsInbox_Create(&inbox) != NATS_OK || natsConnection_SubscribeSync(&answers, k->nc, inbox) != NATS_OK ||
	    natsConnection_PublishRequestString(k->nc, h->subject, inbox, question) != NATS_OK) {
		natsSubscription_Destroy(answers);
		natsInbox_Destroy(inbox);
		return false;
	}
	uint64_t until = kv_monotonic_ns() + HOLD_WINDOW_MS * 1000000ull;
	for (uint64_t now = kv_monotonic_ns(); now < until && !other; now = kv_monotonic_ns()) {
		natsMsg *m = NULL;
		if (natsSubscription_NextMsg(&m, answers, (int64_t)((until - now) / 1000000u) + 1) != NATS_OK)
			break;
		other = another_has_it(m, h->number);
		natsMsg_Destroy(m);
	}
	natsSubscription_Unsubscribe(answers);
	natsSubscription_Destroy(answers);
	natsInbox_Destroy(inbox);
	return other;
}

/* Takes the durable, or fails with e (69) when another kvnats has it. */
static bool hold_durable(struct kv_js *k, const char *stream, const char *durable, struct kv_err *e)
{
	struct kv_js_hold *h = kv_xcalloc(1, sizeof *h);
	pthread_mutex_init(&h->mu, NULL);
	h->state = HOLD_TAKING;
	h->number = draw_number();
	snprintf(h->subject, sizeof h->subject, "%s.%s.%s", HOLD_PREFIX, stream, durable);
	k->hold = h;   /* freed at kv_js_close, once no callback can run */
	natsStatus s = natsConnection_Subscribe(&h->sub, k->nc, h->subject, on_hold_question, h);
	if (s == NATS_OK)
		s = natsConnection_FlushTimeout(k->nc, API_WAIT_MS);
	if (s != NATS_OK)
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: stream %s: durable %s: %s", k->servers, stream, durable,
				  why(s));
	sleep_ms(HOLD_SETTLE_MS);
	bool other = ask_who_holds(k, h);
	pthread_mutex_lock(&h->mu);
	other |= h->state == HOLD_LOST;
	if (!other)
		h->state = HOLD_HELD;
	pthread_mutex_unlock(&h->mu);
	if (!other)
		return true;
	natsSubscription_Unsubscribe(h->sub);
	return kv_err_set(e, KV_EX_UNAVAILABLE,
			  "stream %s: durable %s is in use by another kvnats -C (one consumer per durable at a time)",
			  stream, durable);
}

static void hold_free(struct kv_js_hold *h)
{
	if (!h)
		return;
	natsSubscription_Destroy(h->sub);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/* Creates the consumer of cc; *after is the stream sequence it delivers
 * after (its start less one, or where the stream's first message is). */
static bool create_consumer(struct kv_js *k, const char *stream, jsConsumerConfig *cc, char **name,
			    uint64_t *after, struct kv_err *e)
{
	jsConsumerInfo *ci = NULL;
	jsErrCode jerr;
	natsStatus s;
	struct again a = again_begin(k);
	do {
		jerr = 0;
		jsConsumerInfo_Destroy(ci);
		ci = NULL;
		s = js_AddConsumer(&ci, k->js, stream, cc, NULL, &jerr);
	} while (ask_again(&a, s, jerr));
	if (stream_missing(s, jerr))
		return kv_err_set(e, KV_EX_NOINPUT, "%s: no stream %s", k->servers, stream);
	if (s != NATS_OK)
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: stream %s: cannot create a consumer: %s", k->servers,
				  stream, why(s));
	*name = kv_xstrdup(ci->Name);
	*after = ci->Delivered.Stream;
	jsConsumerInfo_Destroy(ci);
	return true;
}

/* Where o asks the consumer to start (no start: the stream's beginning). */
static void start_where_asked(jsConsumerConfig *cc, const struct kv_js_consumer_opts *o)
{
	cc->DeliverPolicy = o->start == KV_JS_START_SEQ ? js_DeliverByStartSequence :
			    o->start == KV_JS_START_TIME ? js_DeliverByStartTime : js_DeliverAll;
	cc->OptStartSeq = o->start == KV_JS_START_SEQ ? o->start_seq : 0;
	cc->OptStartTime = o->start == KV_JS_START_TIME ? o->start_time_ns : 0;
}

static bool delete_consumer(struct kv_js *k, const char *stream, const char *name, struct kv_err *e)
{
	jsErrCode jerr;
	natsStatus s;
	struct again a = again_begin(k);
	do {
		jerr = 0;
		s = js_DeleteConsumer(k->js, stream, name, NULL, &jerr);
	} while (ask_again(&a, s, jerr));
	/* gone already: a deletion asked again after one that timed out */
	if (s == NATS_OK || s == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr)
		return true;
	return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: stream %s: consumer %s: %s", k->servers, stream, name, why(s));
}

/* An existing durable: bound as it is when it goes on where it is asked to
 * (after its last delivery, or at the start o asks for); else created again
 * there: after its last acknowledged message when some deliveries were never
 * acknowledged (JetStream would send those again after newer ones: out of
 * order), or where o asks. */
static bool reuse_durable(struct kv_js *k, const struct kv_js_consumer_opts *o, jsConsumerInfo *ci, char **name,
			  struct kv_js_bind_info *info, struct kv_err *e)
{
	const char *filter = ci->Config->FilterSubject ? ci->Config->FilterSubject : "";
	if (o->filter && strcmp(o->filter, filter) != 0)
		return kv_err_set(e, KV_EX_USAGE, "stream %s: durable %s filters '%s', not '%s'", o->stream, o->durable,
				  filter, o->filter);
	bool clean = ci->Delivered.Stream <= ci->AckFloor.Stream && ci->NumAckPending == 0;
	bool asked = o->start != KV_JS_START_ALL;
	info->was_after = clean ? ci->Delivered.Stream : ci->AckFloor.Stream;
	if (clean && (!asked || (o->start == KV_JS_START_SEQ && o->start_seq == info->was_after + 1))) {
		info->how = KV_JS_RESUMED;
		info->after = ci->Delivered.Stream;
		*name = kv_xstrdup(o->durable);
		return true;
	}
	jsConsumerConfig cc = *ci->Config;
	if (asked) {
		start_where_asked(&cc, o);
		info->how = KV_JS_MOVED;
	} else {
		if (ci->AckFloor.Stream > 0) {
			cc.DeliverPolicy = js_DeliverByStartSequence;
			cc.OptStartSeq = ci->AckFloor.Stream + 1;
			cc.OptStartTime = 0;
		}
		info->how = KV_JS_AFTER_ACK;
	}
	return delete_consumer(k, o->stream, o->durable, e) && create_consumer(k, o->stream, &cc, name, &info->after, e);
}

static bool bind(struct kv_js_sub *s, struct kv_err *e)
{
	jsSubOptions so;
	jsSubOptions_Init(&so);
	so.Stream = s->stream;
	so.Consumer = s->name;
	jsErrCode jerr;
	natsStatus st;
	struct again a = again_begin(s->k);
	do {
		jerr = 0;
		natsSubscription_Destroy(s->sub);
		s->sub = NULL;
		st = js_PullSubscribe(&s->sub, s->k->js, s->filter, s->name, NULL, &so, &jerr);
	} while (ask_again(&a, st, jerr));
	if (st != NATS_OK)
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: stream %s: cannot subscribe: %s", s->k->servers, s->stream,
				  why(st));
	return true;
}

static bool consumer_info(struct kv_js *k, const char *stream, const char *name, jsConsumerInfo **ci,
			  jsErrCode *jerr, natsStatus *s)
{
	struct again a = again_begin(k);
	do {
		*jerr = 0;
		jsConsumerInfo_Destroy(*ci);
		*ci = NULL;
		*s = js_GetConsumerInfo(ci, k->js, stream, name, NULL, jerr);
	} while (ask_again(&a, *s, *jerr));
	return *s == NATS_OK;
}

bool kv_js_subscribe(struct kv_js *k, const struct kv_js_consumer_opts *o, struct kv_js_sub **out,
		     struct kv_js_bind_info *info, struct kv_err *e)
{
	struct kv_js_stream_state st = { 0 };
	memset(info, 0, sizeof *info);
	if (!kv_js_stream_state(k, o->stream, &st, e))
		return false;
	if (o->durable && !hold_durable(k, o->stream, o->durable, e))
		return false;
	bool ok;
	char *name = NULL;
	jsConsumerInfo *ci = NULL;
	jsErrCode jerr = 0;
	natsStatus s = NATS_NOT_FOUND;
	if (o->durable)
		consumer_info(k, o->stream, o->durable, &ci, &jerr, &s);
	if (s == NATS_OK) {
		ok = reuse_durable(k, o, ci, &name, info, e);
	} else if (s == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr) {
		jsConsumerConfig cc;
		jsConsumerConfig_Init(&cc);
		cc.Durable = o->durable;
		cc.FilterSubject = o->filter;
		cc.AckPolicy = o->durable ? js_AckAll : js_AckNone;
		cc.MaxAckPending = 100000;
		/* as many copies as the stream, as a durable has: an ephemeral on
		 * one server alone was lost with it, and the run with it */
		cc.Replicas = st.replicas;
		start_where_asked(&cc, o);
		info->how = KV_JS_NEW;
		ok = create_consumer(k, o->stream, &cc, &name, &info->after, e);
	} else {
		ok = kv_err_set(e, KV_EX_UNAVAILABLE, "%s: stream %s: durable %s: %s", k->servers, o->stream, o->durable,
				why(s));
	}
	bool ack = ci ? ci->Config->AckPolicy != js_AckNone : o->durable != NULL;
	jsConsumerInfo_Destroy(ci);
	if (!ok) {
		free(name);
		return false;
	}
	struct kv_js_sub *sub = kv_xcalloc(1, sizeof *sub);
	sub->k = k;
	sub->ack = ack;
	sub->ephemeral = o->durable == NULL;
	sub->stream = kv_xstrdup(o->stream);
	sub->filter = kv_xstrdup(o->filter ? o->filter : "");
	sub->name = name;
	sub->start = info->after;
	if (!bind(sub, e)) {
		kv_js_unsubscribe(sub);
		return false;
	}
	*out = sub;
	return true;
}

/* The consumer made again, after the last message handed out. */
static bool restart_after_gap(struct kv_js_sub *s, struct kv_err *e)
{
	struct kv_js *k = s->k;
	jsConsumerInfo *ci = NULL;
	jsErrCode jerr = 0;
	natsStatus st;
	if (!consumer_info(k, s->stream, s->name, &ci, &jerr, &st))
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: stream %s: consumer %s: %s", k->servers, s->stream, s->name,
				  why(st));
	jsConsumerConfig cc = *ci->Config;
	cc.DeliverPolicy = js_DeliverByStartSequence;
	cc.OptStartSeq = s->last_sseq + 1;
	cc.OptStartTime = 0;
	if (s->ephemeral)
		cc.Name = NULL;
	natsMsgList_Destroy(&s->list);
	memset(&s->list, 0, sizeof s->list);
	s->last = NULL;
	natsSubscription_Destroy(s->sub);
	s->sub = NULL;
	char *name = NULL;
	uint64_t after;
	bool ok = delete_consumer(k, s->stream, s->name, e) && create_consumer(k, s->stream, &cc, &name, &after, e);
	jsConsumerInfo_Destroy(ci);
	if (!ok)
		return false;
	free(s->name);
	s->name = name;
	s->last_cseq = 0;
	s->restart = false;
	s->restarts++;
	return bind(s, e);
}

/* What a STREAM.MSG.GET asks for: the last message on filter, or the first
 * on filter after the stream sequence after. */
struct msg_get {
	bool next;
	uint64_t after;
	const char *filter;
};

/* The request's JSON, NUL-terminated. */
static void msg_get_request(struct kv_out *body, const struct msg_get *q)
{
	const char *filter = q->filter && *q->filter ? q->filter : ">";
	struct jw w;
	jw_begin(&w, body);
	if (q->next) {
		jw_put_lit(&w, "{\"seq\":");
		jw_put_u64(&w, q->after + 1);
		jw_put_lit(&w, ",\"next_by_subj\":");
	} else {
		jw_put_lit(&w, "{\"last_by_subj\":");
	}
	jw_put_cstr(&w, filter);
	jw_put_char(&w, '}');
	jw_put_char(&w, '\0');
	jw_end(&w);
}

/* STREAM.MSG.GET: the stream sequence of the message q asks for, 0 if
 * there is none.  Only the stream's leader answers with a message; a
 * member that knows of no leader (a cluster electing one, a server back from
 * a restart) answers at once with an error, so errors are tried again for
 * the retry time, and only the last one is reported.  (The stream's info,
 * by contrast, comes from such a member too, with what it holds: a replica
 * catching up answers with less than the stream has.) */
static bool msg_get_seq(struct kv_js *k, const char *stream, const struct msg_get *q, uint64_t *seq,
			struct kv_err *e)
{
	char subject[300];
	snprintf(subject, sizeof subject, "$JS.API.STREAM.MSG.GET.%s", stream);
	struct kv_out body;
	kv_out_open_mem(&body);
	msg_get_request(&body, q);
	uint64_t deadline = kv_monotonic_ns() + k->retry_ns;
	char last[256] = "";
	bool ok = false;
	for (;;) {
		natsMsg *resp = NULL;
		natsStatus st = natsConnection_RequestString(&resp, k->nc, subject, body.buf, API_WAIT_MS);
		if (st != NATS_OK) {
			snprintf(last, sizeof last, "%s", why(st));
		} else {
			json_t *root = json_loadb(natsMsg_GetData(resp), (size_t)natsMsg_GetDataLength(resp), 0, NULL);
			natsMsg_Destroy(resp);
			json_t *msg = json_object_get(root, "message"), *err = json_object_get(root, "error");
			json_int_t n = json_integer_value(json_object_get(msg, "seq"));
			const char *what = json_string_value(json_object_get(err, "description"));
			/* 404: no such message */
			ok = (msg && n > 0) || json_integer_value(json_object_get(err, "code")) == 404;
			if (ok)
				*seq = msg ? (uint64_t)n : 0;
			else
				snprintf(last, sizeof last, "%s", what ? what : "a reply that is no message");
			json_decref(root);
		}
		if (ok || kv_monotonic_ns() > deadline)
			break;
		sleep_ms(250);
	}
	kv_out_free_mem(&body);
	return ok || kv_err_set(e, KV_EX_UNAVAILABLE, "%s: stream %s: %s", k->servers, stream, last);
}

bool kv_js_last_seq(struct kv_js *k, const char *stream, const char *filter, uint64_t *seq, struct kv_err *e)
{
	const struct msg_get q = { .next = false, .filter = filter };
	return msg_get_seq(k, stream, &q, seq, e);
}

/* The sequence of the stream's first message after pos that the consumer
 * takes (its filter), from the stream's leader; 0 if there is none. */
static bool next_in_stream(struct kv_js_sub *s, uint64_t pos, uint64_t *seq, struct kv_err *e)
{
	const struct msg_get q = { .next = true, .after = pos, .filter = s->filter };
	return msg_get_seq(s->k, s->stream, &q, seq, e);
}

bool kv_js_done(struct kv_js_sub *s, uint64_t end_seq, bool *done, struct kv_err *e)
{
	jsConsumerInfo *ci = NULL;
	jsErrCode jerr = 0;
	natsStatus st;
	if (!consumer_info(s->k, s->stream, s->name, &ci, &jerr, &st))
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: consumer: %s", s->k->servers, why(st));
	uint64_t pending = ci->NumPending;
	jsConsumerInfo_Destroy(ci);
	*done = false;
	if (pending > 0)
		return true;
	/* nothing pending where the consumer is: the end, unless its server is
	 * still catching up with the stream (a replica back from a restart) */
	uint64_t pos = s->last_sseq ? s->last_sseq : s->start, next = 0;
	if (pos >= end_seq) {
		*done = true;
		return true;
	}
	if (!next_in_stream(s, pos, &next, e))
		return false;
	*done = next == 0 || next > end_seq;
	return true;
}

/* One pull request: what is there now (nowait), or the first message to
 * come within timeout_ms. */
static natsStatus pull(struct kv_js_sub *s, int max, bool nowait, int timeout_ms)
{
	natsMsgList_Destroy(&s->list);
	memset(&s->list, 0, sizeof s->list);
	jsFetchRequest req;
	jsFetchRequest_Init(&req);
	req.Batch = max;
	req.MaxBytes = FETCH_MAX_BYTES;
	req.NoWait = nowait;
	req.Expires = (int64_t)timeout_ms * 1000000;
	return natsSubscription_FetchRequest(&s->list, s->sub, &req);
}

bool kv_js_fetch(struct kv_js_sub *s, int max, int timeout_ms, const struct kv_js_msg **msgs, int *count,
		 struct kv_err *e)
{
	*count = 0;
	if (s->restart && !restart_after_gap(s, e))
		return false;
	/* a waiting request returns when its batch is full or it expires: so
	 * everything there is at once, and when nothing is, a wait for one (its
	 * timeout is no failure: nothing came) */
	natsStatus st;
	struct again a = again_begin(s->k);
	do {
		st = pull(s, max, true, timeout_ms);
		if (st == NATS_OK && s->list.Count == 0)
			st = NATS_TIMEOUT;
		if (st == NATS_TIMEOUT || st == NATS_NOT_FOUND)
			st = pull(s, 1, false, timeout_ms);
	} while (st != NATS_TIMEOUT && ask_again(&a, st, 0));
	s->last = NULL;
	if (st == NATS_TIMEOUT)
		return true;
	if (st != NATS_OK)
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: fetch: %s", s->k->servers, why(st));
	s->msgs = kv_xgrow(s->msgs, &s->capmsgs, (size_t)s->list.Count, sizeof *s->msgs);
	int n = 0;
	for (int i = 0; i < s->list.Count && !s->restart; i++) {
		natsMsg *m = s->list.Msgs[i];
		jsMsgMetaData *md = NULL;
		if (natsMsg_GetMetaData(&md, m) != NATS_OK)
			return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: a message without JetStream metadata", s->k->servers);
		uint64_t cseq = md->Sequence.Consumer;
		if (s->last_cseq && cseq != s->last_cseq + 1) {
			/* at or before the last one: sent again, already handed out */
			s->restart = cseq > s->last_cseq;
		} else {
			s->msgs[n++] = (struct kv_js_msg){ (const uint8_t *)natsMsg_GetData(m),
							   (size_t)natsMsg_GetDataLength(m), md->Sequence.Stream,
							   md->NumPending, natsMsg_GetSubject(m), md->Timestamp };
			s->last_cseq = cseq;
			s->last_sseq = md->Sequence.Stream;
			s->last = m;
		}
		jsMsgMetaData_Destroy(md);
	}
	*msgs = s->msgs;
	*count = n;
	/* after a gap, the messages before it; the rest comes again */
	return n == 0 && s->restart ? kv_js_fetch(s, max, timeout_ms, msgs, count, e) : true;
}

bool kv_js_ack(struct kv_js_sub *s, bool sync, struct kv_err *e)
{
	if (!s->ack || !s->last)
		return true;
	jsErrCode jerr;
	natsStatus st;
	struct again a = again_begin(s->k);
	do {
		jerr = 0;
		st = sync ? natsMsg_AckSync(s->last, NULL, &jerr) : natsMsg_Ack(s->last, NULL);
	} while (ask_again(&a, st, jerr));
	if (st != NATS_OK)
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: acknowledgement: %s", s->k->servers, why(st));
	return true;
}

uint64_t kv_js_restarts(const struct kv_js_sub *s)
{
	return s->restarts;
}

void kv_js_unsubscribe(struct kv_js_sub *s)
{
	if (!s)
		return;
	natsMsgList_Destroy(&s->list);
	/* a durable stays on the server, and is let go; an ephemeral goes now
	 * rather than after the server's inactivity threshold */
	if (s->ephemeral && s->name)
		js_DeleteConsumer(s->k->js, s->stream, s->name, NULL, NULL);
	if (!s->ephemeral && s->k->hold)
		natsSubscription_Unsubscribe(s->k->hold->sub);
	natsSubscription_Destroy(s->sub);
	free(s->msgs);
	free(s->stream);
	free(s->name);
	free(s->filter);
	free(s);
}

/* ---- listing ---- */

static int by_stream_name(const void *a, const void *b)
{
	const jsStreamInfo *x = *(jsStreamInfo *const *)a, *y = *(jsStreamInfo *const *)b;
	return strcmp(x->Config->Name, y->Config->Name);
}

static int by_consumer_name(const void *a, const void *b)
{
	const jsConsumerInfo *x = *(jsConsumerInfo *const *)a, *y = *(jsConsumerInfo *const *)b;
	return strcmp(x->Name, y->Name);
}

static bool list_consumers(struct kv_js *k, const char *stream, const struct kv_js_lister *l, struct kv_err *e)
{
	jsConsumerInfoList *cl = NULL;
	jsErrCode jerr;
	natsStatus s;
	struct again a = again_begin(k);
	do {
		jerr = 0;
		s = js_Consumers(&cl, k->js, stream, NULL, &jerr);
	} while (ask_again(&a, s, jerr));
	if (s == NATS_NOT_FOUND)
		return true;
	if (s != NATS_OK)
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: stream %s: consumers: %s", k->servers, stream, why(s));
	qsort(cl->List, (size_t)cl->Count, sizeof *cl->List, by_consumer_name); // NOLINT(bugprone-sizeof-expression)
	for (int i = 0; i < cl->Count; i++) {
		const jsConsumerInfo *ci = cl->List[i];
		const char *f = ci->Config->FilterSubject;
		struct kv_js_consumer_row r = { stream, ci->Name, f && *f ? f : NULL, ci->Config->Durable != NULL,
						ci->NumPending, (uint64_t)ci->NumAckPending, ci->Delivered.Stream,
						ci->AckFloor.Stream };
		l->consumer(l->arg, &r);
	}
	jsConsumerInfoList_Destroy(cl);
	return true;
}

bool kv_js_list(struct kv_js *k, const char *only, const struct kv_js_lister *l, struct kv_err *e)
{
	jsStreamInfoList *sl = NULL;
	jsErrCode jerr;
	natsStatus s;
	struct again a = again_begin(k);
	do {
		jerr = 0;
		s = js_Streams(&sl, k->js, NULL, &jerr);
	} while (ask_again(&a, s, jerr));
	if (s == NATS_NOT_FOUND && !only)
		return true;
	if (s != NATS_OK && s != NATS_NOT_FOUND)
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: streams: %s", k->servers, why(s));
	bool found = false, ok = true;
	if (sl)
		qsort(sl->List, (size_t)sl->Count, sizeof *sl->List, by_stream_name); // NOLINT(bugprone-sizeof-expression)
	for (int i = 0; sl && i < sl->Count; i++) {
		const jsStreamInfo *si = sl->List[i];
		if (only && strcmp(only, si->Config->Name) != 0)
			continue;
		found = true;
		struct kv_js_stream_row r = { si->Config->Name, si->Config->Subjects, si->Config->SubjectsLen,
					      si->State.Msgs, si->State.Bytes, si->State.FirstSeq, si->State.LastSeq,
					      si->Config->Replicas, si->State.Consumers };
		l->stream(l->arg, &r);
		if (!(ok = list_consumers(k, si->Config->Name, l, e)))
			break;
	}
	jsStreamInfoList_Destroy(sl);
	if (ok && only && !found)
		return kv_err_set(e, KV_EX_NOINPUT, "%s: no stream %s", k->servers, only);
	return ok;
}

/* ---- core NATS ------------------------------------------------------------ */

struct kv_js_core {
	struct kv_js *k;
	natsSubscription *sub;
	natsMsg *last;
};

bool kv_js_core_subscribe(struct kv_js *js, const char *subject, struct kv_js_core **sub, struct kv_err *e)
{
	struct kv_js_core *c = kv_xcalloc(1, sizeof *c);
	c->k = js;
	natsStatus st = natsConnection_SubscribeSync(&c->sub, js->nc, subject);
	if (st == NATS_OK)
		st = natsConnection_Flush(js->nc);
	if (st != NATS_OK) {
		kv_js_core_unsubscribe(c);
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: subscribe %s: %s", js->servers, subject, why(st));
	}
	*sub = c;
	return true;
}

bool kv_js_core_next(struct kv_js_core *c, int timeout_ms, struct kv_js_msg *msg, bool *got, struct kv_err *e)
{
	natsMsg_Destroy(c->last);
	c->last = NULL;
	*got = false;
	natsMsg *m = NULL;
	natsStatus st = natsSubscription_NextMsg(&m, c->sub, timeout_ms);
	if (st == NATS_TIMEOUT)
		return true;
	if (st != NATS_OK)
		return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: receive: %s", c->k->servers, why(st));
	c->last = m;
	*msg = (struct kv_js_msg){ (const uint8_t *)natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), 0, 0,
				   natsMsg_GetSubject(m), 0 };
	*got = true;
	return true;
}

void kv_js_core_unsubscribe(struct kv_js_core *c)
{
	if (!c)
		return;
	natsMsg_Destroy(c->last);
	natsSubscription_Destroy(c->sub);
	free(c);
}
