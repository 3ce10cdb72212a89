/* publish: republishing captured messages on ZMQ PUB sockets (kvpub).
 * Owns which socket publishes which source (explicit SRC=ENDPOINT maps,
 * ports counted up from a base in order of first appearance, or one socket
 * for every source), the PUB sockets, and for each socket a vLLM replay
 * server on a ROUTER socket (kvsub(1) "Replay") that answers from the batches
 * the socket published, in either reply shape.  Also owns waiting, for a
 * record's time or for more input, during which the replay servers keep
 * answering and the stop flag is noticed within 100 ms.  The capture format
 * stays in kvcap, the protocol frames in replay, the kept batches in
 * replaybuf. */
#ifndef KV_PUBLISH_H
#define KV_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "decode/kvcap.h"
#include "base/out.h"
#include "net/replay.h"

#define KV_PUB_BUFFER_STEPS 10000            /* vLLM's default buffer_steps */
#define KV_PUB_BUFFER_BYTES (256u << 20)     /* and at most this much per socket */
/* Replies queued for replay clients that do not read them (kvpub(1)):
 * at most this much per client beyond its first reply, this much in all
 * beyond one reply, and this many clients known at a time. */
#define KV_PUB_REPLY_CLIENT_BYTES (16u << 20)
#define KV_PUB_REPLY_TOTAL_BYTES (64u << 20)
#define KV_PUB_MAX_PEERS 1024u
/* Sources kept, at most (kvpub(1), LIMITS): a capture of a real cluster has
 * far fewer, and each is kept for the whole run. */
#define KV_PUB_MAX_SOURCES 65536u

struct kv_pub_opts {
	const char *host;            /* host of port-base endpoints, "127.0.0.1" */
	long port_base;              /* -1: sources without a map are not published */
	long replay_port_base;       /* -1: replay sockets only from replay maps */
	const char *single;          /* one endpoint for every source, or NULL */
	int hwm;                     /* ZMQ_SNDHWM of the PUB sockets */
	size_t buffer_steps;         /* batches kept per socket for replay */
	size_t buffer_bytes;
	enum kv_replay_shape shape;
};

struct kv_pub;
struct kv_pub_src;

/* What kv_pub_lookup found for a source. */
struct kv_pub_route {
	struct kv_pub_src *src;
	const char *name;            /* the src, NUL-terminated */
	bool published;              /* false: no socket for it (not in the maps) */
	bool fresh;                  /* the first lookup of this source */
	bool bound;                  /* a socket was bound for it just now */
	bool over;                   /* a new source beyond KV_PUB_MAX_SOURCES: src and name are NULL */
};

struct kv_pub *kv_pub_new(const struct kv_pub_opts *o);
/* Every setup call returns false, with 64 (bad endpoint or conflicting
 * maps) or 69 (binding failed) and the message in e, when it fails. */
/* SRC's replay socket; applied when SRC gets its PUB socket. */
bool kv_pub_replay_map(struct kv_pub *p, const char *src, const char *endpoint, struct kv_err *e);
/* Publishes SRC on ENDPOINT (bound now; several sources may share one). */
bool kv_pub_map(struct kv_pub *p, const char *src, const char *endpoint, struct kv_err *e);
/* Binds the single socket, if any, and the replay sockets known so far. */
bool kv_pub_start(struct kv_pub *p, struct kv_err *e);
/* The route of a source, binding its socket on first sight when the port
 * base or the single socket says where. */
bool kv_pub_lookup(struct kv_pub *p, const char *src, size_t len, struct kv_pub_route *r, struct kv_err *e);

/* Sends the record's frames on its source's socket (unless drop: then it is
 * only buffered, as if lost on the way) and keeps [topic, seq, payload]
 * messages for replay.  A seq that goes back (a publisher restart, a new
 * --loop pass) empties the socket's buffer, as a restarted vLLM's is.
 * False, with the message in e, when ZMQ fails: 70, for a PUB socket
 * drops what it cannot queue and refuses nothing else. */
bool kv_pub_send(struct kv_pub *p, const struct kv_pub_src *s, const struct kv_record *rec, bool drop,
		 struct kv_err *e);

/* Waits until the monotonic time due_ns, answering replay requests; false
 * when a stop signal came first. */
bool kv_pub_wait_until(struct kv_pub *p, uint64_t due_ns);
/* Waits until fd has input (or its end), answering replay requests; false
 * when a stop signal came first. */
bool kv_pub_wait_input(struct kv_pub *p, int fd);

/* The next source that --map or --replay-map named (kv_pub_map or
 * kv_pub_replay_map) and no lookup ever met, from *pos on; NULL when none
 * is left.  *option is "--map" or "--replay-map", whichever named it. */
const char *kv_pub_next_unseen(const struct kv_pub *p, size_t *pos, const char **option);

/* "PROG: SRC -> ENDPOINT[, replay ENDPOINT]" */
void kv_pub_print_route(const struct kv_pub *p, const struct kv_pub_src *s, FILE *f);
/* The same as a JSON line: {"src":..,"endpoint":..,"replay_endpoint":..} */
void kv_pub_write_route(const struct kv_pub *p, const struct kv_pub_src *s, struct kv_out *o);
/* One line per socket: messages, bytes, and what its replay server did. */
void kv_pub_print_stats(const struct kv_pub *p, bool drops, FILE *f);
size_t kv_pub_sockets(const struct kv_pub *p);
/* Closes everything; with flush, queued messages still get up to a second
 * to leave (ZMQ_LINGER), else they are dropped. */
void kv_pub_free(struct kv_pub *p, bool flush);

#endif
