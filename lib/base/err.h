/* err: the one way lib/ says what went wrong, for bin/ to tell the user.
 * A function that can fail returns bool, false when it failed, and fills a
 * struct kv_err with the exit status the failure calls for (util.h) and a
 * message.  lib/ never prints: the program prints with kv_err_print or
 * kv_err_exit, as `PROG: message` (made printable, like every diagnostic),
 * so that a failure reads the same whatever program met it.  A function
 * that finds several problems (each bad line of a file) adds a message for
 * each, in the order found; the status is then the most serious of theirs
 * (kv_status_merge).  Problems a reader finds in one record of a stream it
 * goes on reading (a batch's error, a query line's) are data of that
 * record, not failures, and stay with it.
 *
 * One exception, for what no caller could handle: kv_die(KV_EX_SOFTWARE,
 * ...) (util.h), exit 70, when memory or a resource the process needs to
 * run at all is not there (out of memory, a ZMQ context, /dev/null for a
 * closed descriptor), or when the program's own bound is passed (a count
 * past the 32-bit field a structure or format gives it, a call against a
 * function's contract).  Never for the user's data, files, options or
 * peers: those are a kv_err.  tests/layers keeps kv_die in lib/ to status
 * KV_EX_SOFTWARE. */
#ifndef KV_ERR_H
#define KV_ERR_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

/* Zeroed, it holds nothing: `struct kv_err e = { 0 };`.  The messages are
 * on the heap, of any length; a filled kv_err is printed (which empties
 * it) or emptied with kv_err_clear. */
struct kv_err {
	int status;     /* KV_EX_*: what the messages call for, merged */
	char *text;     /* the messages, each ending in NUL; NULL when none */
	size_t len, cap;
};

/* Adds a message and merges status into e->status.  Returns false, so that
 * a function that fails can end with `return kv_err_set(e, ...);`. */
bool kv_err_set(struct kv_err *e, int status, const char *fmt, ...) KV_PRINTF(3, 4);
/* kv_err_set, plus ": strerror(errno)" (errno as it was on entry). */
bool kv_err_set_errno(struct kv_err *e, int status, const char *fmt, ...) KV_PRINTF(3, 4);
/* Whether e holds a message. */
static inline bool kv_err_any(const struct kv_err *e) { return e->len > 0; }
/* The first message ("" when none), for a caller that says it in its own
 * words (a scrape failure in kvstat's table). */
const char *kv_err_msg(const struct kv_err *e);
void kv_err_clear(struct kv_err *e);

/* For bin/: each message as `PROG: message` on stderr, in order; empties e
 * and returns its status (0 when it held nothing). */
int kv_err_print(struct kv_err *e);
/* kv_err_print, then `Try 'PROG --help'.` for a usage error (64), and exit
 * with the status. */
_Noreturn void kv_err_exit(struct kv_err *e);

#endif
