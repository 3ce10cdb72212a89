/* diagnose: kvmatch --diagnose.  Reads the evidence matching gathered per
 * source and per worker and names what is wrong with a deployment: each
 * finding has a kind, a severity, the source (and worker) it is about, its
 * evidence as numbers, a sentence, and the likely cause.  The rules and
 * their thresholds live here and nowhere else; kvmatch(1) lists them. */
#ifndef KV_DIAGNOSE_H
#define KV_DIAGNOSE_H

#include <stddef.h>
#include <stdio.h>

#include "index/match.h"

enum kv_diag_format { KV_DIAG_TEXT, KV_DIAG_JSON };

/* Writes one report to f: text lines, or one JSON document on one line.
 * Returns the number of findings. */
size_t kv_diagnose(const struct kv_match *m, enum kv_diag_format fmt, FILE *f);

#endif
