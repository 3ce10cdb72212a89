/* input: opening the files a program reads, the one rule for all of them.
 * "-" is standard input.  A file that cannot be opened, and a directory
 * (open(2) gives it, but read(2) never will), is an input that cannot be
 * opened: "PATH: why", exit status 66, in every program and for every kind
 * of input (captures, event lines, queries, traces, registrations). */
#ifndef KV_INPUT_H
#define KV_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/err.h"

/* Opens path for reading (close-on-exec) into *fd; false with e (66) and
 * *fd -1. */
bool kv_input_open(const char *path, int *fd, struct kv_err *e);
/* The open-name-close idiom of every program that reads a named input:
 * kv_input_open, and the name messages give it, "stdin" for "-" (the
 * path itself otherwise, which must outlive the input). */
bool kv_input_open_named(const char *path, int *fd, const char **name, struct kv_err *e);
/* Closes an input kv_input_open gave, unless it is standard input, which
 * stays open for whatever reads it next. */
void kv_input_close(int fd);
/* stat(2) of the input path names: fstat of standard input for "-". */
int kv_input_stat(const char *path, struct stat *st);
/* The size of the input path names ("-": standard input, from where it
 * stands) when it is a regular file: what its reading comes to, for the
 * progress line (base/progress.h).  False for a pipe, a terminal, a
 * device, or a file that cannot be examined. */
bool kv_input_size(const char *path, uint64_t *size);
/* Whether every one of n inputs is a regular file, or does not open (it
 * fails in its turn): what a thread reads ahead without ever waiting,
 * where a pipe or a terminal is read as it comes (kvmatch's decoding,
 * kvquery's parsing). */
bool kv_inputs_regular(char *const *paths, size_t n);
/* The sizes of n inputs added up (none: standard input); false when one
 * of them is not a regular file, and the whole is not known. */
bool kv_inputs_size(char *const *paths, size_t n, uint64_t *total);

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
/* A stream being read as it comes (event lines, captures, traces: the one
 * read loop of base/lines and decode/mpstream).  Before a read that would
 * block, idle runs (kv_wait_input), so that a program flushes its output
 * and answers its signals while its input is quiet; a stop signal ends the
 * wait, and a signal that interrupts a read runs idle again.  bytes counts
 * what was read, for the progress line (base/progress.h). */
struct kv_reader {
	int fd;
	void (*idle)(void *);   /* NULL: reads block */
	void *idle_arg;
	uint64_t bytes;         /* read so far */
	int err;                /* errno of the read that failed */
};
void kv_reader_init(struct kv_reader *r, int fd);
/* One read of at most room bytes into buf: KV_READ_OK with *got bytes, 0
 * at the end of the input; KV_READ_STOPPED on a stop signal; KV_READ_ERROR
 * with r->err. */
enum kv_read_status kv_reader_fill(struct kv_reader *r, void *buf, size_t room, size_t *got);

/* The one message for a load that a signal stopped: "PATH: loading stopped
 * by a signal", with status 0.  Returns false. */
bool kv_input_stopped(struct kv_err *e, const char *path);

#endif
