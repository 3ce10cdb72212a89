#include "base/progress.h"
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Rates and the time left before this are noise: a few records over a few
 * microseconds. */
#define SETTLED_NS 500000000ull
#define DEFAULT_WIDTH 80
#define MAX_LINE 512

enum kv_progress_mode kv_progress_choose(int forced, bool quiet, bool output_on_stdout)
{
	if (forced < 0)
		return KV_PROGRESS_OFF;
	bool tty = isatty(STDERR_FILENO);
	bool shared = output_on_stdout && isatty(STDOUT_FILENO);
	if (forced > 0)
		return tty && !shared ? KV_PROGRESS_TTY : KV_PROGRESS_LINES;
	return tty && !shared && !quiet ? KV_PROGRESS_TTY : KV_PROGRESS_OFF;
}

void kv_progress_init(struct kv_progress *p, enum kv_progress_mode mode, const char *records_unit,
		      const char *events_unit)
{
	*p = (struct kv_progress){ .mode = mode, .records_unit = records_unit, .events_unit = events_unit };
	p->start_ns = kv_monotonic_ns();
	p->next_ns = p->start_ns;     /* the first record draws the first line */
	p->countdown = 1;
}

void kv_progress_set_total(struct kv_progress *p, bool known, uint64_t total)
{
	p->total_known = known;
	p->total = known ? total : 0;
}

bool kv_progress_clock_due(struct kv_progress *p)
{
	p->countdown = KV_PROGRESS_EVERY;
	return kv_monotonic_ns() >= p->next_ns;
}

void kv_progress_bytes(uint64_t b, char *out, size_t n)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (b < 1024) {
		snprintf(out, n, "%u B", (unsigned)b);
		return;
	}
	double v = (double)b / 1024;
	size_t u = 0;
	/* 1023.96 KiB would print as 1024.0 KiB: the next unit instead */
	while (v >= 1023.95 && u + 1 < sizeof unit / sizeof unit[0]) {
		v /= 1024;
		u++;
	}
	snprintf(out, n, "%.1f %s", v, unit[u]);
}

void kv_progress_rate(double per_s, char *out, size_t n)
{
	static const char suffix[] = { 0, 'k', 'M', 'G', 'T' };
	size_t s = 0;
	double v = per_s < 0 ? 0 : per_s;
	/* three figures, rounded as printed: 999.7 is 1.00k */
	while (v >= 999.5 && s + 1 < sizeof suffix) {
		v /= 1000;
		s++;
	}
	const char *fmt = s == 0 || v >= 99.95 ? "%.0f%s" : v >= 9.995 ? "%.1f%s" : "%.2f%s";
	char suf[2] = { suffix[s], 0 };
	snprintf(out, n, fmt, v, suf);
}

void kv_progress_time(uint64_t seconds, char *out, size_t n)
{
	unsigned long long h = seconds / 3600;
	unsigned m = (unsigned)(seconds / 60 % 60), sec = (unsigned)(seconds % 60);
	if (h)
		snprintf(out, n, "%llu:%02u:%02u", h, m, sec);
	else
		snprintf(out, n, "%u:%02u", m, sec);
}

/* " 457k records/s", or " - records/s" before the rate means anything. */
static int rate_field(char *buf, size_t size, bool settled, uint64_t count, double secs, const char *unit)
{
	char r[32] = "-";
	if (settled)
		kv_progress_rate(secs > 0 ? (double)count / secs : 0, r, sizeof r);
	return snprintf(buf, size, " %s %s/s", r, unit);
}

/* Appends what snprintf made of the rest, as much as fits. */
static size_t advance(size_t at, int k, size_t size)
{
	if (k < 0)
		return at;
	return at + (size_t)k < size ? at + (size_t)k : size - 1;
}

size_t kv_progress_format(char *buf, size_t size, size_t width, const struct kv_progress_view *v)
{
	char read[32], total[32], t[32];
	double secs = (double)v->elapsed_ns / 1e9;
	bool settled = v->final || v->elapsed_ns >= SETTLED_NS;
	size_t at = 0;
	kv_progress_bytes(v->bytes, read, sizeof read);
	at = advance(at, snprintf(buf, size, "%s: %s", v->prog, read), size);
	if (v->total_known) {
		kv_progress_bytes(v->total, total, sizeof total);
		unsigned pct = v->total ? (unsigned)((v->bytes >= v->total ? 1.0 : (double)v->bytes / (double)v->total) * 100) : 100;
		at = advance(at, snprintf(buf + at, size - at, " of %s (%u%%)", total, pct), size);
	}
	at = advance(at, rate_field(buf + at, size - at, settled, v->records, secs, v->records_unit), size);
	if (v->events_unit)
		at = advance(at, rate_field(buf + at, size - at, settled, v->events, secs, v->events_unit), size);
	kv_progress_time(v->elapsed_ns / 1000000000u, t, sizeof t);
	at = advance(at, snprintf(buf + at, size - at, " %s", t), size);
	if (v->total_known && !v->final) {
		/* at the pace so far: the bytes left over the bytes a second */
		char left[32] = "-";
		if (v->bytes >= v->total)
			kv_progress_time(0, left, sizeof left);
		else if (settled && v->bytes > 0)
			kv_progress_time((uint64_t)((double)(v->total - v->bytes) * secs / (double)v->bytes + 0.5), left,
					 sizeof left);
		at = advance(at, snprintf(buf + at, size - at, " ETA %s", left), size);
	}
	if (width > 0 && at > width - 1) {
		at = width - 1;
		buf[at] = 0;
	}
	return at;
}

/* The terminal's width, asked each time: a resized window is followed at
 * the next drawing. */
static size_t terminal_width(void)
{
	struct winsize ws;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return DEFAULT_WIDTH;
}

/* One write(2) for the whole line, so that nothing comes between its
 * pieces.  A failure of standard error is not the run's: the line is
 * given up, silently (there is nowhere to say it). */
static void put(const char *s, size_t n)
{
	while (n > 0) {
		ssize_t k = write(STDERR_FILENO, s, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

static void draw(struct kv_progress *p, uint64_t now, bool final, uint64_t bytes, uint64_t records, uint64_t events)
{
	struct kv_progress_view v = {
		.prog = kv_prog, .bytes = bytes, .total_known = p->total_known, .total = p->total,
		.records_unit = p->records_unit, .events_unit = p->events_unit,
		.records = records, .events = events, .elapsed_ns = now - p->start_ns, .final = final,
	};
	char line[MAX_LINE + 8];
	bool tty = p->mode == KV_PROGRESS_TTY;
	size_t width = tty ? terminal_width() : 0;
	if (!tty || width > MAX_LINE)
		width = MAX_LINE;
	size_t at = 0;
	if (tty)
		line[at++] = '\r';
	at += kv_progress_format(line + at, sizeof line - at - 4, width, &v);
	/* on a terminal: the rest of the last line cleared; elsewhere a whole line */
	memcpy(line + at, tty ? "\033[K" : "\n", tty ? 3 : 1);
	at += tty ? 3 : 1;
	put(line, at);
	p->shown = tty;
}

void kv_progress_show(struct kv_progress *p, uint64_t bytes, uint64_t records, uint64_t events)
{
	if (p->mode == KV_PROGRESS_OFF)
		return;
	uint64_t now = kv_monotonic_ns();
	draw(p, now, false, bytes, records, events);
	p->next_ns = now + (p->mode == KV_PROGRESS_TTY ? KV_PROGRESS_TTY_NS : KV_PROGRESS_LINES_NS);
}

void kv_progress_hide(struct kv_progress *p)
{
	if (!p->shown)
		return;
	put("\r\033[K", 4);
	p->shown = false;
}

void kv_progress_end(struct kv_progress *p, uint64_t bytes, uint64_t records, uint64_t events)
{
	if (p->mode == KV_PROGRESS_LINES)
		draw(p, kv_monotonic_ns(), true, bytes, records, events);
	kv_progress_hide(p);
	p->mode = KV_PROGRESS_OFF;
}
