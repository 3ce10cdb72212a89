/* util: what every program shares about talking to its user.
 * The program's name and `PROG: message` diagnostics, sysexits statuses
 * and the one order they merge in, range-checked number parsing, the one signal flag the main loops poll,
 * and clocks. */
#ifndef KV_UTIL_H
#define KV_UTIL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sysexits.h>

#ifndef KV_VERSION
#define KV_VERSION "0.0.0"
#endif

/* Exit statuses, kvtools(7) "Conventions" (sysexits names, plus "nothing found"). */
enum {
	KV_EX_OK = 0,
	KV_EX_NOTFOUND = 1,
	KV_EX_USAGE = EX_USAGE,         /* 64 */
	KV_EX_DATAERR = EX_DATAERR,     /* 65 */
	KV_EX_NOINPUT = EX_NOINPUT,     /* 66 */
	KV_EX_UNAVAILABLE = EX_UNAVAILABLE, /* 69 */
	KV_EX_SOFTWARE = EX_SOFTWARE,   /* 70 */
	KV_EX_IOERR = EX_IOERR,         /* 74 */
};

/* The exit status of a run that met both a and b: the more serious, by
 *   usage (64) > internal (70) > write (74) > unavailable (69)
 *   > cannot open (66) > bad data (65) > nothing found (1) > success (0).
 * A usage error is found before any work and says the command itself is
 * wrong; an internal error (out of memory) means nothing of the run can be
 * trusted; a write error, that its product is cut short or missing (kvnats
 * and kvstat put it before 69, kvdecode, kvmatch and kvquery before 66);
 * a service that never answered (69: a lost publish, no scrape at all)
 * before an input that could not be opened (kvnats -P); an input not
 * opened, whose records are all missing, before records that could not be
 * used (kvdecode, kvmatch, kvquery, kvnats); any of these before "nothing
 * found".  Any other status ranks below 65 and above 1, the larger first.
 * Commutative and associative: the order failures are met in does not
 * matter (doc/conventions.md "Exit status"). */
int kv_status_merge(int a, int b);

#define KV_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* The program's name, set once from argv[0]. */
extern const char *kv_prog;
/* Nonzero (the signal number) once SIGINT, SIGTERM or SIGHUP arrived. */
extern volatile sig_atomic_t kv_stop_signal;
/* Last SIGUSR1/SIGUSR2 received and not yet taken with kv_take_user_signal. */
extern volatile sig_atomic_t kv_user_signal;

/* Sets kv_prog to argv[0] without its directories, and points argv[0] at
 * that name too: getopt starts its own messages about a bad option with
 * argv[0], and they must read `PROG: ...` like every other (kvtools(7) "Conventions").
 * Call it first in main, before getopt_long. */
void kv_set_prog(char **argv);
/* What every main calls first, before getopt_long: kv_set_prog, and the
 * standard descriptors 0-2 a program was started without are reserved
 * (/dev/null in their place, open so that a read of 0 or a write to 1 or 2
 * still fails), so that no file or socket it opens later takes their
 * numbers (kvtools(7) "Conventions").  Exits 70 when /dev/null cannot be
 * opened. */
void kv_start(char **argv);

void kv_warn(const char *fmt, ...) KV_PRINTF(1, 2);
/* kv_warn, plus ": strerror(errno)". */
void kv_warn_errno(const char *fmt, ...) KV_PRINTF(1, 2);
/* `PROG: message` and exit.  In lib/ only as kv_die(KV_EX_SOFTWARE, ...),
 * for what no caller could handle (lib/base/err.h says which). */
_Noreturn void kv_die(int status, const char *fmt, ...) KV_PRINTF(2, 3);
/* A bad option or value: one line, then `Try 'PROG --help'.`, exit 64. */
_Noreturn void kv_usage_error(const char *fmt, ...) KV_PRINTF(1, 2);
/* The second half of that, after getopt_long has printed the first line. */
_Noreturn void kv_try_help(void);
/* Prints `PROG VERSION` on stdout and exits 0 (or 74 if stdout fails). */
_Noreturn void kv_print_version(void);
/* Writes text to stdout and exits 0, or 74 if stdout fails. */
_Noreturn void kv_print_help(const char *text);

/* Installs the flag-only handlers; SIGPIPE is ignored so that writes return EPIPE. */
void kv_install_signals(bool user_signals);
/* Waits until fd has input (or EOF): calls idle at once when none is ready,
 * then again every KV_IDLE_TICK_MS and after each signal, so that a program
 * blocked on a quiet pipe still flushes, answers SIGUSR1/2 and rewrites its
 * metrics.  false when a stop signal came. */
#define KV_IDLE_TICK_MS 200
bool kv_wait_input(int fd, void (*idle)(void *), void *arg);
int kv_take_user_signal(void);
/* When a stop signal (kv_stop_signal) ended the run before its end (the
 * end of input, -c, -W), one line on stderr, said before the products are
 * finished: `PROG: stopped by SIGTERM before the end; what came before it
 * goes to A, B`, naming each of the n products (NULL: none; "-": standard
 * output).  Nothing when no stop signal came.  Programs say it unless -q. */
void kv_say_stopped(const char *const *products, size_t n);

/* Range-checked parsing of option values; false on any junk or overflow. */
bool kv_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
bool kv_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
/* A decimal: an optional '-', digits, an optional point with digits
 * after it; no exponent, no hexadecimal, no "inf" or "nan". */
bool kv_parse_double(const char *s, double min, double max, double *out);
/* Seconds as a non-negative decimal ("2", "0.5") into nanoseconds. */
bool kv_parse_seconds(const char *s, double max, uint64_t *ns);

uint64_t kv_realtime_ns(void);
uint64_t kv_monotonic_ns(void);
/* A time in nanoseconds since 1970 for people, in UTC to the nanosecond:
 * "2026-12-01T10:00:00.123456789Z" (as JetStream writes its times). */
#define KV_UTC_NS_LEN 48
char *kv_utc_ns(uint64_t ns, char out[KV_UTC_NS_LEN]);

/* malloc family that end the program with status 70 instead of returning NULL. */
void *kv_xmalloc(size_t n);
void *kv_xcalloc(size_t n, size_t size);
void *kv_xrealloc(void *p, size_t n);
/* Array growth: new capacity for at least `need` elements of `size` bytes. */
void *kv_xgrow(void *p, size_t *cap, size_t need, size_t size);
/* The same growth into new memory, p's contents dropped (freed): for an
 * array written whole before it is read, which realloc would copy, or move
 * by mremap under pages read again at a cost at their first touch. */
void *kv_xrenew(void *p, size_t *cap, size_t need, size_t size);
char *kv_xstrdup(const char *s);
char *kv_xstrndup(const char *s, size_t n);

#endif
