/* progress: the one progress line of a long run (kvdecode, kvmatch,
 * kvnats -P, kvgen, kvpub), kvtools(7) "Conventions".
 *
 *   kvmatch: 1.2 GiB of 10.0 GiB (12%) 457k records/s 1.23M events/s 0:12 ETA 1:28
 *
 * The bytes read of their total where the total is known (every input a
 * regular file: kv_inputs_size), the rates of records and events (where
 * the program has events) since the start, the time elapsed, and, with a
 * total, the time left at that pace.  Rates and the time left appear once
 * half a second has passed, "-" before.
 *
 * On a terminal (KV_PROGRESS_TTY) the line is drawn over itself with '\r'
 * and cleared to its end, four times a second, cut to the terminal's width
 * (TIOCGWINSZ, asked at each drawing, so that a resized terminal is
 * followed without a SIGWINCH handler; 80 columns when it is not known),
 * and erased before anything else is said on standard error
 * (kv_progress_hide) and at the end, so that the final statistics stand
 * alone.  Elsewhere, when asked (KV_PROGRESS_LINES: --progress into a file
 * or a pipe, or a standard output on the same terminal), each update is a
 * whole line ending in '\n', once a second, and a last one with the totals
 * at the end: a log never holds a line cut by '\r'.
 *
 * Cheap: kv_progress_due is a countdown, the clock read every
 * KV_PROGRESS_EVERY records; the program counts its records, the readers
 * their bytes (base/input.h, kv_reader), and the line gets them only when
 * it is drawn. */
#ifndef KV_PROGRESS_H
#define KV_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kv_progress_mode { KV_PROGRESS_OFF, KV_PROGRESS_TTY, KV_PROGRESS_LINES };

/* --progress (1), --no-progress (-1), neither (0): the last one given wins. */
#define KV_PROGRESS_OPTIONS                                                       \
	{ "progress", no_argument, NULL, KV_OPT_PROGRESS },                       \
	{ "no-progress", no_argument, NULL, KV_OPT_NO_PROGRESS }
enum { KV_OPT_PROGRESS = 1000, KV_OPT_NO_PROGRESS };

/* The one rule for whether there is a line and how it is written.  forced:
 * 1 --progress, -1 --no-progress, 0 neither; output_on_stdout: the program
 * writes its output to standard output (then a terminal there is shared).
 *   --no-progress: none.
 *   neither: on a terminal (stderr) without -q, and only when standard
 *     output is not a terminal that the program writes to: none otherwise.
 *   --progress: drawn on a terminal (stderr) that the output does not
 *     share, whole lines otherwise (a file, a pipe, or a terminal shared
 *     with the output, whose lines are whole too), -q or not. */
enum kv_progress_mode kv_progress_choose(int forced, bool quiet, bool output_on_stdout);

#define KV_PROGRESS_EVERY 64u
#define KV_PROGRESS_TTY_NS 250000000ull     /* 4 drawings a second on a terminal */
#define KV_PROGRESS_LINES_NS 1000000000ull  /* a line a second elsewhere */

struct kv_progress {
	enum kv_progress_mode mode;
	const char *records_unit;   /* "records", "requests" */
	const char *events_unit;    /* "events", or NULL when the program has none */
	bool total_known;
	uint64_t total;             /* bytes of all the inputs */
	uint64_t start_ns;
	uint64_t next_ns;           /* when the line is next drawn */
	unsigned countdown;         /* records until the clock is read */
	bool shown;                 /* a line is on the terminal */
};

void kv_progress_init(struct kv_progress *p, enum kv_progress_mode mode, const char *records_unit,
		      const char *events_unit);
/* The inputs' size when known (kv_inputs_size). */
void kv_progress_set_total(struct kv_progress *p, bool known, uint64_t total);

bool kv_progress_clock_due(struct kv_progress *p);
/* Whether the line is to be drawn now: call once per record. */
static inline bool kv_progress_due(struct kv_progress *p)
{
	if (p->mode == KV_PROGRESS_OFF || --p->countdown > 0)
		return false;
	return kv_progress_clock_due(p);
}
/* The same while the input is quiet (an idle callback): the clock at once. */
static inline bool kv_progress_idle_due(struct kv_progress *p)
{
	return p->mode != KV_PROGRESS_OFF && kv_progress_clock_due(p);
}
/* Draws the line (or writes one) with these counts. */
void kv_progress_show(struct kv_progress *p, uint64_t bytes, uint64_t records, uint64_t events);
/* Erases the line from the terminal before a message on standard error;
 * nothing when none is shown.  It comes back at its next drawing. */
void kv_progress_hide(struct kv_progress *p);
/* At the end of the run, before its statistics: the line erased (a
 * terminal), or a last line with the totals (KV_PROGRESS_LINES). */
void kv_progress_end(struct kv_progress *p, uint64_t bytes, uint64_t records, uint64_t events);

/* What a line says, for kv_progress_format. */
struct kv_progress_view {
	const char *prog;
	uint64_t bytes;
	bool total_known;
	uint64_t total;
	const char *records_unit, *events_unit;
	uint64_t records, events;
	uint64_t elapsed_ns;
	bool final;                 /* the last line: rates whatever the time, no time left */
};
/* The line, without '\r' or '\n', cut to width - 1 columns (the last
 * column left free: a terminal that wraps there would scroll), into buf
 * of size bytes (at least width); its length. */
size_t kv_progress_format(char *buf, size_t size, size_t width, const struct kv_progress_view *v);
/* Pieces of the line: bytes in IEC units ("512 B", "1.2 MiB"), a rate in
 * three figures with an SI suffix ("12", "457k", "1.23M"), a time as m:ss
 * or h:mm:ss.  Each into out of at least 16 bytes. */
void kv_progress_bytes(uint64_t b, char *out, size_t n);
void kv_progress_rate(double per_s, char *out, size_t n);
void kv_progress_time(uint64_t seconds, char *out, size_t n);

#endif
