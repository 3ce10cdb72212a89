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

#endif
