#include "base/util.h"
#include "base/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *kv_prog = "kvtools";

/* Higher is more serious; see kv_status_merge. */
static int severity(int status)
{
	switch (status) {
	case KV_EX_OK: return 0;
	case KV_EX_NOTFOUND: return 1;
	case KV_EX_DATAERR: return 3;
	case KV_EX_NOINPUT: return 4;
	case KV_EX_UNAVAILABLE: return 5;
	case KV_EX_IOERR: return 6;
	case KV_EX_SOFTWARE: return 7;
	case KV_EX_USAGE: return 8;
	default: return 2;
	}
}

int kv_status_merge(int a, int b)
{
	int sa = severity(a), sb = severity(b);
	if (sa != sb)
		return sa > sb ? a : b;
	return a > b ? a : b;
}
volatile sig_atomic_t kv_stop_signal;
volatile sig_atomic_t kv_user_signal;

void kv_set_prog(char **argv)
{
	char *argv0 = argv ? argv[0] : NULL;   /* NULL when run with argc 0 */
	if (!argv0 || !*argv0)
		return;
	char *slash = strrchr(argv0, '/');
	if (slash && slash[1])
		argv[0] = slash + 1;
	kv_prog = argv[0];
}

/* A descriptor of 0-2 the program was started without would be taken by
 * the first file or socket it opens, which would then get what is meant
 * for standard output (kvnats -C's records into its NATS connection) or
 * be read as standard input.  /dev/null takes its place, open the wrong
 * way (for writing onto 0, for reading onto 1 and 2), so that it stays as
 * unusable as it was: a read or write fails with EBADF as before, and a
 * program writing to a closed stdout says so and exits 74 (kvtools(7)
 * "Conventions"). */
static void reserve_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		int got = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
		if (got < 0)
			kv_die(KV_EX_SOFTWARE, "/dev/null: %s (to stand for closed descriptor %d)", strerror(errno), fd);
		if (got != fd) {   /* lower ones are open: only when fd was not closed after all */
			dup2(got, fd);
			close(got);
		}
	}
}

void kv_start(char **argv)
{
	kv_set_prog(argv);
	reserve_std_fds();
}

/* Every message goes through kv_printable: file names, sources and ids in
 * it come from input, and must not drive the terminal.  Formatted on the
 * stack (and, when longer, in memory of its own, never kv_xmalloc: this
 * also reports that out of memory), cleaned in place. */
static void vwarn(const char *fmt, va_list ap, int errnum)
{
	char small[1024], *msg = small;
	va_list again;
	va_copy(again, ap);
	int k = vsnprintf(small, sizeof small, fmt, ap);
	size_t n = k > 0 ? (size_t)k : 0;
	if (n >= sizeof small) {
		msg = malloc(n + 1);
		if (msg)
			vsnprintf(msg, n + 1, fmt, again);
		else
			msg = small, n = sizeof small - 1;
	}
	va_end(again);
	size_t len = kv_printable(msg, n + 1, msg, n);
	fprintf(stderr, "%s: %.*s", kv_prog, (int)len, msg);
	if (errnum)
		fprintf(stderr, ": %s", strerror(errnum));
	fputc('\n', stderr);
	if (msg != small)
		free(msg);
}

void kv_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap, 0);
	va_end(ap);
}

void kv_warn_errno(const char *fmt, ...)
{
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap, e);
	va_end(ap);
}

void kv_die(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap, 0);
	va_end(ap);
	exit(status);
}

void kv_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap, 0);
	va_end(ap);
	kv_try_help();
}

void kv_try_help(void)
{
	fprintf(stderr, "Try '%s --help'.\n", kv_prog);
	exit(KV_EX_USAGE);
}

static _Noreturn void exit_after_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
		if (errno == EPIPE)
			exit(KV_EX_OK);
		kv_warn_errno("stdout");
		exit(KV_EX_IOERR);
	}
	exit(KV_EX_OK);
}

/* Help and version are written before kv_install_signals: a closed pipe
 * must give EPIPE and status 0 there too, not death by SIGPIPE. */
static void ignore_sigpipe(void)
{
	signal(SIGPIPE, SIG_IGN);
}

void kv_print_version(void)
{
	ignore_sigpipe();
	printf("%s %s\n", kv_prog, KV_VERSION);
	exit_after_stdout();
}

void kv_print_help(const char *text)
{
	ignore_sigpipe();
	fputs(text, stdout);
	exit_after_stdout();
}

static void on_stop(int sig) { kv_stop_signal = sig; }
static void on_user(int sig) { kv_user_signal = sig; }

void kv_install_signals(bool user_signals)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocking read or poll returns EINTR so the loop sees the flag. */
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (user_signals) {
		sa.sa_handler = on_user;
		sigaction(SIGUSR1, &sa, NULL);
		sigaction(SIGUSR2, &sa, NULL);
	}
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGINT: return "SIGINT";
	case SIGTERM: return "SIGTERM";
	case SIGHUP: return "SIGHUP";
	default: return "a signal";
	}
}

void kv_say_stopped(const char *const *products, size_t n)
{
	if (!kv_stop_signal)
		return;
	char *list = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&list, &len);
	const char *sep = "; what came before it goes to ";
	for (size_t i = 0; f && i < n; i++) {
		if (!products[i])
			continue;
		fprintf(f, "%s%s", sep, strcmp(products[i], "-") == 0 ? "standard output" : products[i]);
		sep = ", ";
	}
	if (f && fclose(f) != 0) {
		free(list);
		list = NULL;
	}
	kv_warn("stopped by %s before the end%s", signal_name(kv_stop_signal), list ? list : "");
	free(list);
}

int kv_take_user_signal(void)
{
	int s = kv_user_signal;
	if (s)
		kv_user_signal = 0;
	return s;
}

/* strtoumax and friends skip leading white space and accept a sign: an
 * option value must start with what it is. */
static bool starts_numeric(const char *s, bool sign)
{
	return s && ((*s >= '0' && *s <= '9') || (sign && *s == '-' && s[1] >= '0' && s[1] <= '9'));
}

bool kv_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	if (!starts_numeric(s, false))
		return false;
	errno = 0;
	uintmax_t v = strtoumax(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = (uint64_t)v;
	return true;
}

bool kv_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	if (!starts_numeric(s, true))
		return false;
	errno = 0;
	intmax_t v = strtoimax(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = (int64_t)v;
	return true;
}

/* The one form of a fractional number (kvtools(7) "Conventions"): an
 * optional '-', digits and an optional point with digits after it
 * ("2", "0.5", ".5", "2."), so that what strtod takes besides (an
 * exponent, hexadecimal, "inf") is refused here as the integer options
 * refuse it. */
static bool decimal_form(const char *s)
{
	size_t digits = 0;
	s += *s == '-';
	for (; *s >= '0' && *s <= '9'; s++)
		digits++;
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			digits++;
	return digits && !*s;
}

bool kv_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	if (!s || !decimal_form(s))
		return false;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool kv_parse_seconds(const char *s, double max, uint64_t *ns)
{
	double v;
	if (!kv_parse_double(s, 0, max, &v))
		return false;
	*ns = (uint64_t)llround(v * 1e9);
	return true;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t kv_realtime_ns(void) { return clock_ns(CLOCK_REALTIME); }
uint64_t kv_monotonic_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

char *kv_utc_ns(uint64_t ns, char out[KV_UTC_NS_LEN])
{
	time_t secs = (time_t)(ns / 1000000000u);
	struct tm tm;
	if (!gmtime_r(&secs, &tm) || strftime(out, KV_UTC_NS_LEN, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		snprintf(out, KV_UTC_NS_LEN, "%" PRIu64 " ns", ns);
	else
		snprintf(out + strlen(out), KV_UTC_NS_LEN - strlen(out), ".%09uZ", (unsigned)(ns % 1000000000u));
	return out;
}

static _Noreturn void out_of_memory(size_t n)
{
	kv_die(KV_EX_SOFTWARE, "out of memory (%zu bytes)", n);
}

void *kv_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		out_of_memory(n);
	return p;
}

void *kv_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		out_of_memory(n * size);
	return p;
}

void *kv_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		out_of_memory(n);
	return q;
}

void *kv_xrenew(void *p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return p;
	free(p);
	size_t c = 0;
	p = kv_xgrow(NULL, &c, need, size);
	*cap = c;
	return p;
}

void *kv_xgrow(void *p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return p;
	size_t c = *cap ? *cap : 8;
	while (c < need) {
		if (c > SIZE_MAX / 2 / size)
			out_of_memory(SIZE_MAX);
		c *= 2;
	}
	p = kv_xrealloc(p, c * size);
	*cap = c;
	return p;
}

char *kv_xstrdup(const char *s)
{
	return kv_xstrndup(s, strlen(s));
}

char *kv_xstrndup(const char *s, size_t n)
{
	char *p = kv_xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

bool kv_wait_input(int fd, void (*idle)(void *), void *arg)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int timeout = 0;
	for (;;) {
		if (kv_stop_signal)
			return false;
		int n = poll(&p, 1, timeout);
		if (n > 0 || (n < 0 && errno != EINTR))
			return true; /* ready, or let read() report the error */
		if (kv_stop_signal)
			return false;
		idle(arg);
		timeout = KV_IDLE_TICK_MS;
	}
}
