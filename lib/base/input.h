/* input: opening the files a program reads, the one rule for all of them.
 * "-" is standard input.  A file that cannot be opened, and a directory
 * (open(2) gives it, but read(2) never will), is an input that cannot be
 * opened: "PATH: why", exit status 66, in every program and for every kind
 * of input (captures, event lines, queries, traces, registrations). */
#ifndef KV_INPUT_H
#define KV_INPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

/* Opens path for reading (close-on-exec) into *fd; false with e (66) and
 * *fd -1. */
bool kv_input_open(const char *path, int *fd, struct kv_err *e);
/* For a program whose input is all or nothing (kvmatch: a snapshot of part
 * of the input would replace the last good one): before anything is read
 * or written, every one of the n named files must open.  False when one
 * does not, with a message for each that does not, in order.  A named
 * pipe (or other file that is not a regular file) must be readable by its
 * permissions instead: it is opened once, when it is read. */
bool kv_inputs_check(char *const *paths, size_t n, struct kv_err *e);

/* Reading an input a program loads whole before it starts (a snapshot, a
 * registrations file): never more than the caller's bound, in pieces of at
 * most KV_INPUT_PIECE, with the stop flag (kv_stop_signal) polled between
 * them and while a read waits (a pipe with nothing to say), so that SIGINT
 * or SIGTERM ends a load of gigabytes, or of a pipe that never ends,
 * within a piece.  A stopped load is not a failure of the input: the
 * program ends with nothing loaded, and with its status after a signal
 * (0, kvtools(7) "Conventions"), writing nothing that the load was for. */
#define KV_INPUT_PIECE ((size_t)256 << 10)
enum kv_read_status { KV_READ_OK, KV_READ_STOPPED, KV_READ_ERROR };
/* Reads up to n bytes into d from fd's offset: *got is how many came,
 * fewer than n only at the end of the input.  KV_READ_ERROR with errno
 * set on a read error. */
enum kv_read_status kv_input_read(int fd, void *d, size_t n, size_t *got);
/* The one message for a load that a signal stopped: "PATH: loading stopped
 * by a signal", with status 0.  Returns false. */
bool kv_input_stopped(struct kv_err *e, const char *path);

#endif
