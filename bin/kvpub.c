/* kvpub: publish captured KV-cache event messages again on ZMQ PUB sockets. */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/input.h"
#include "decode/kvcap.h"
#include "base/out.h"
#include "base/progress.h"
#include "net/pace.h"
#include "net/publish.h"
#include "net/replay.h"
#include "base/optval.h"
#include "base/util.h"

static const char usage[] =
	"Usage: kvpub [OPTION]... [FILE]...\n"
	"Publish the messages of kvcap captures again, byte for byte, on ZMQ PUB sockets\n"
	"at their recorded pace, and answer vLLM replay requests for them.  With no FILE,\n"
	"or when FILE is -, read standard input.\n"
	"\n"
	"Where (--map, --port-base or both, or --single):\n"
	"  -m, --map SRC=ENDPOINT   publish the records of SRC on ENDPOINT (repeatable);\n"
	"                           without --port-base, other sources are skipped\n"
	"  -p, --port-base PORT     one port per other source: PORT, PORT+1, ... in order\n"
	"                           of first appearance\n"
	"      --single ENDPOINT    publish every record on one socket\n"
	"      --host HOST          host of the port bases (default 127.0.0.1)\n"
	"When:\n"
	"  -s, --speed N|max        N times the recorded pace (default 1), max: no wait\n"
	"  -l, --loop               play the input again and again (files only)\n"
	"      --start TIME         skip records stamped before TIME: seconds after the\n"
	"                           first record, or @NS for a recv_ns\n"
	"      --end TIME           skip records stamped at or after TIME\n"
	"  -c, --count N            stop after N records\n"
	"      --drop N[-M]         do not send records N to M of the input but keep them\n"
	"                           for replay, as if lost on the way (repeatable)\n"
	"      --slow-joiner-wait SECS  wait after binding, before publishing (0.5)\n"
	"      --linger SECS        answer replay requests SECS after the end (default 1)\n"
	"Replay (vLLM's protocol, one ROUTER socket per publishing socket):\n"
	"      --replay-port-base PORT  replay sockets on HOST:PORT, PORT+1, ... in the\n"
	"                           order of the publishing sockets\n"
	"      --replay-map SRC=ENDPOINT  replay socket of the socket that publishes SRC\n"
	"      --replay-shape v0.25|v0.26  reply shape (default v0.26, with the topic)\n"
	"      --buffer-steps N     batches kept per socket for replay (default 10000)\n"
	"Other:\n"
	"      --hwm N              messages queued per subscriber before ZMQ drops\n"
	"                           (default 100000, 0 means no limit)\n"
	"  -o, --output FILE        write the mapping as JSON lines (- for stdout)\n"
	"  -q, --quiet              no mapping, warnings, statistics or progress line on stderr\n"
	"      --progress           a progress line on stderr, even when it is not a terminal\n"
	"                           (then a whole line a second)\n"
	"      --no-progress        no progress line (the default on a terminal is one)\n"
	"  -v, --verbose            a summary at the end\n"
	"  -h, --help               show this help and exit\n"
	"  -V, --version            show the version and exit\n"
	"\n"
	"Exit status: 0 success (also after SIGINT or SIGTERM), 64 usage, 65 bad input\n"
	"(every complete record was published), 66 cannot open a file, 69 cannot bind an\n"
	"endpoint, 70 internal error, 74 write error.  See kvpub(1).\n";

enum {
	OPT_SINGLE = 256, OPT_HOST, OPT_START, OPT_END, OPT_DROP, OPT_WAIT, OPT_LINGER, OPT_REPLAY_BASE,
	OPT_REPLAY_MAP, OPT_SHAPE, OPT_STEPS, OPT_HWM,
};

static const struct option longopts[] = {
	{ "map", required_argument, NULL, 'm' },
	{ "port-base", required_argument, NULL, 'p' },
	{ "single", required_argument, NULL, OPT_SINGLE },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "speed", required_argument, NULL, 's' },
	{ "loop", no_argument, NULL, 'l' },
	{ "start", required_argument, NULL, OPT_START },
	{ "end", required_argument, NULL, OPT_END },
	{ "count", required_argument, NULL, 'c' },
	{ "drop", required_argument, NULL, OPT_DROP },
	{ "slow-joiner-wait", required_argument, NULL, OPT_WAIT },
	{ "linger", required_argument, NULL, OPT_LINGER },
	{ "replay-port-base", required_argument, NULL, OPT_REPLAY_BASE },
	{ "replay-map", required_argument, NULL, OPT_REPLAY_MAP },
	{ "replay-shape", required_argument, NULL, OPT_SHAPE },
	{ "buffer-steps", required_argument, NULL, OPT_STEPS },
	{ "hwm", required_argument, NULL, OPT_HWM },
	{ "output", required_argument, NULL, 'o' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	KV_PROGRESS_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* A time of --start/--end: seconds after the first record, or a recv_ns. */
struct when {
	bool set, absolute;
	uint64_t ns;
};

struct range {
	uint64_t lo, hi;
};

struct options {
	const char **maps, **replay_maps;      /* SRC=ENDPOINT */
	size_t nmaps, nreplay_maps;
	struct range *drops;
	size_t ndrops;
	double speed;
	bool loop;
	struct when start, end;
	uint64_t max_records;
	uint64_t wait_ns, linger_ns;
	const char *output;
	int quiet, verbose;
	int progress;                 /* --progress 1, --no-progress -1 */
	struct kv_pub_opts pub;
};

static void parse_when(const char *name, const char *arg, struct when *w)
{
	w->set = true;
	w->absolute = arg[0] == '@';
	if (w->absolute ? !kv_parse_u64(arg + 1, 0, UINT64_MAX, &w->ns) : !kv_parse_seconds(arg, 1e9, &w->ns))
		kv_usage_error("%s: '%s' is not seconds after the first record or @NS", name, arg);
}

static void parse_pair(const char *name, const char *arg)
{
	struct kv_span src, endpoint;
	kv_opt_pair(name, arg, &src, &endpoint, "SRC=ENDPOINT");
}

static long parse_port(const char *name, const char *arg)
{
	uint64_t v;
	if (!kv_parse_u64(arg, 1, 65535, &v))
		kv_usage_error("%s: '%s' is not a port number", name, arg);
	return (long)v;
}

static void parse_drop(struct options *o, const char *arg)
{
	char lo[32], *dash;
	struct range r;
	snprintf(lo, sizeof lo, "%s", arg);
	dash = strchr(lo, '-');
	if (dash)
		*dash = 0;
	if (strlen(arg) >= sizeof lo || !kv_parse_u64(lo, 1, UINT64_MAX, &r.lo) ||
	    (dash ? !kv_parse_u64(dash + 1, r.lo, UINT64_MAX, &r.hi) : !((r.hi = r.lo))))
		kv_usage_error("--drop: '%s' is not N or N-M (record numbers from 1)", arg);
	o->drops[o->ndrops++] = r;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	uint64_t v;
	int c;
	o->speed = 1;
	o->wait_ns = 500000000ull;
	o->linger_ns = 1000000000ull;
	o->pub = (struct kv_pub_opts){ .host = "127.0.0.1", .port_base = -1, .replay_port_base = -1,
				       .hwm = 100000, .buffer_steps = KV_PUB_BUFFER_STEPS,
				       .buffer_bytes = KV_PUB_BUFFER_BYTES, .shape = KV_REPLAY_V026 };
	o->maps = kv_xcalloc((size_t)argc, sizeof *o->maps);
	o->replay_maps = kv_xcalloc((size_t)argc, sizeof *o->replay_maps);
	o->drops = kv_xcalloc((size_t)argc, sizeof *o->drops);
	while ((c = getopt_long(argc, argv, "m:p:s:lc:o:qvhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			parse_pair("--map", optarg);
			o->maps[o->nmaps++] = optarg;
			break;
		case 'p': o->pub.port_base = parse_port("--port-base", optarg); break;
		case OPT_SINGLE:
			kv_opt_name("--single", optarg, "an endpoint");
			o->pub.single = optarg;
			break;
		case OPT_HOST:
			kv_opt_name("--host", optarg, "a host");
			o->pub.host = optarg;
			break;
		case 's':
			if (strcmp(optarg, "max") == 0)
				o->speed = 0;
			else if (!kv_parse_double(optarg, 1e-6, 1e9, &o->speed) || o->speed <= 0)
				kv_usage_error("--speed: '%s' is not a positive number or max", optarg);
			break;
		case 'l': o->loop = true; break;
		case OPT_START: parse_when("--start", optarg, &o->start); break;
		case OPT_END: parse_when("--end", optarg, &o->end); break;
		case 'c':
			if (!kv_parse_u64(optarg, 1, UINT64_MAX, &o->max_records))
				kv_usage_error("-c: '%s' is not a count of 1 or more", optarg);
			break;
		case OPT_DROP: parse_drop(o, optarg); break;
		case OPT_WAIT:
			if (!kv_parse_seconds(optarg, 3600, &o->wait_ns))
				kv_usage_error("--slow-joiner-wait: '%s' is not a number of seconds", optarg);
			break;
		case OPT_LINGER:
			if (!kv_parse_seconds(optarg, 1e6, &o->linger_ns))
				kv_usage_error("--linger: '%s' is not a number of seconds", optarg);
			break;
		case OPT_REPLAY_BASE: o->pub.replay_port_base = parse_port("--replay-port-base", optarg); break;
		case OPT_REPLAY_MAP:
			parse_pair("--replay-map", optarg);
			o->replay_maps[o->nreplay_maps++] = optarg;
			break;
		case OPT_SHAPE:
			if (strcmp(optarg, "v0.25") == 0 || strcmp(optarg, "0.25") == 0)
				o->pub.shape = KV_REPLAY_V025;
			else if (strcmp(optarg, "v0.26") == 0 || strcmp(optarg, "0.26") == 0)
				o->pub.shape = KV_REPLAY_V026;
			else
				kv_usage_error("--replay-shape: '%s' is not v0.25 or v0.26", optarg);
			break;
		case OPT_STEPS:
			if (!kv_parse_u64(optarg, 0, 100000000, &v))
				kv_usage_error("--buffer-steps: '%s' is not a count", optarg);
			o->pub.buffer_steps = (size_t)v;
			break;
		case OPT_HWM:
			if (!kv_parse_u64(optarg, 0, 100000000, &v))
				kv_usage_error("--hwm: '%s' is not a count (0 means no limit)", optarg);
			o->pub.hwm = (int)v;
			break;
		case 'o': o->output = optarg; break;
		case 'q': o->quiet++; break;
		case 'v': o->verbose++; break;
		case KV_OPT_PROGRESS: o->progress = 1; break;
		case KV_OPT_NO_PROGRESS: o->progress = -1; break;
		case 'h': kv_print_help(usage);
		case 'V': kv_print_version();
		default: kv_try_help();
		}
	}
	if (o->pub.single && (o->nmaps || o->pub.port_base >= 0))
		kv_usage_error("--single publishes everything on one socket: no --map or --port-base with it");
	if (!o->pub.single && !o->nmaps && o->pub.port_base < 0)
		kv_usage_error("nowhere to publish: give --map, --port-base or --single");
	if (o->start.set && o->end.set && o->start.absolute == o->end.absolute && o->end.ns <= o->start.ns)
		kv_usage_error("--end must come after --start");
}

/* One input file, open from the start to the end of the run. */
struct input {
	const char *name;
	int fd;
	off_t start;
	bool regular;
};

struct run {
	const struct options *o;
	struct kv_pub *pub;
	struct kv_out *out;           /* the mapping as JSON lines, or NULL */
	struct input *in;
	size_t nin;
	struct kv_pace pace;
	int idle_fd;
	bool started;                 /* publishing began: a new socket needs its own wait */
	bool have_first;
	uint64_t start_ns, end_ns;
	uint64_t read, taken, outside, unmapped, bad, number;
	uint64_t unseen;              /* mapped sources the input did not have */
	bool complete;                /* every input was played to its end */
	uint64_t over;                /* lookups of sources beyond KV_PUB_MAX_SOURCES */
	uint64_t over_records;        /* ... and the records of those skipped */
	int fatal;                    /* exit status of a failure that ended the run */
	struct kv_progress progress;
	uint64_t bytes_done;          /* taken from the inputs played to their end (every pass) */
	const struct kv_mpstream *playing;  /* the input being played */
};

static uint64_t bytes_taken(const struct run *r)
{
	return r->bytes_done + (r->playing ? kv_mps_taken(r->playing) : 0);
}

static void open_inputs(struct run *r, char **files, size_t n)
{
	static char *stdin_only[] = { "-" };
	if (n == 0) {
		files = stdin_only;
		n = 1;
	}
	r->in = kv_xcalloc(n, sizeof *r->in);
	r->nin = n;
	for (size_t i = 0; i < n; i++) {
		struct input *in = &r->in[i];
		struct kv_err e = { 0 };
		if (!kv_input_open_named(files[i], &in->fd, &in->name, &e))
			exit(kv_err_print(&e));
		struct stat st;
		in->regular = fstat(in->fd, &st) == 0 && S_ISREG(st.st_mode);
		in->start = in->regular ? lseek(in->fd, 0, SEEK_CUR) : -1;
		if (in->start < 0)
			in->regular = false;
		if (r->o->loop && !in->regular)
			kv_usage_error("--loop: %s cannot be read again (not a file)", in->name);
	}
}

static void rewind_input(struct input *in)
{
	if (lseek(in->fd, in->start, SEEK_SET) < 0) {
		kv_warn_errno("%s", in->name);
		exit(KV_EX_IOERR);
	}
}

/* A source met in the input: its route, announced the first time. */
static bool meet(struct run *r, const char *src, size_t len, struct kv_pub_route *route)
{
	struct kv_err e = { 0 };
	if (!kv_pub_lookup(r->pub, src, len, route, &e)) {
		kv_progress_hide(&r->progress);
		r->fatal = kv_err_print(&e);
		return false;
	}
	if (route->over) {
		if (!r->over++ && !r->o->quiet) {
			kv_progress_hide(&r->progress);
			kv_warn("more than %u sources: the records of the others are skipped", KV_PUB_MAX_SOURCES);
		}
		return true;
	}
	if (!route->fresh)
		return true;
	kv_progress_hide(&r->progress);
	if (route->published) {
		if (!r->o->quiet)
			kv_pub_print_route(r->pub, route->src, stderr);
		if (r->out) {
			kv_pub_write_route(r->pub, route->src, r->out);
			kv_out_flush(r->out);
		}
	} else if (!r->o->quiet) {
		kv_warn("%s: not in --map; its records are skipped", route->name);
	}
	return true;
}

/* Reads a file once to bind every source's socket before publishing. */
static void prescan(struct run *r, struct input *in)
{
	struct kv_cap_reader rd;
	struct kv_record rec;
	struct kv_pub_route route;
	enum kv_cap_status st;
	kv_cap_open(&rd, in->fd, in->name);
	while (!kv_stop_signal && !r->fatal && (st = kv_cap_next(&rd, &rec)) != KV_CAP_EOF &&
	       st != KV_CAP_ERROR && st != KV_CAP_STOPPED)
		if (st == KV_CAP_RECORD)
			meet(r, rec.src, rec.src_len, &route);
	kv_cap_close(&rd);
	rewind_input(in);
}

/* Names each source that --map or --replay-map gave and the input did not
 * have (a typo, or the wrong capture: nothing would be published for it);
 * returns how many. */
static uint64_t report_unseen(struct run *r)
{
	const char *name, *option;
	uint64_t n = 0;
	for (size_t pos = 0; (name = kv_pub_next_unseen(r->pub, &pos, &option)); n++)
		kv_warn("%s %s: no record of this source in the input", option, name);
	return n;
}

/* The same when the inputs were read beforehand: a usage error before
 * anything is published. */
static void refuse_unseen(struct run *r)
{
	if (report_unseen(r))
		kv_try_help();
}

/* Before a read that would block: answer replay requests until input comes. */
static void on_idle(void *arg)
{
	struct run *r = arg;
	if (!kv_pub_wait_input(r->pub, r->idle_fd)) {
		/* Stopping: the reader's next read() must not block, so it gets an
		 * empty input in place of the pipe. */
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, r->idle_fd);
			close(null);
		}
	}
}

static bool dropped(const struct options *o, uint64_t number)
{
	for (size_t i = 0; i < o->ndrops; i++)
		if (number >= o->drops[i].lo && number <= o->drops[i].hi)
			return true;
	return false;
}

/* The window is fixed by the first record of the input, whatever its source. */
static void note_first(struct run *r, uint64_t recv_ns)
{
	if (!r->have_first) {
		r->have_first = true;
		const struct options *o = r->o;
		r->start_ns = !o->start.set ? 0 : o->start.absolute ? o->start.ns : recv_ns + o->start.ns;
		r->end_ns = !o->end.set ? UINT64_MAX : o->end.absolute ? o->end.ns : recv_ns + o->end.ns;
	}
}

enum play { PLAY_ON, PLAY_STOP };

/* One record: to its socket at its time.  PLAY_STOP when the run ends. */
static enum play play_record(struct run *r, const struct input *in, const struct kv_record *rec)
{
	const struct options *o = r->o;
	struct kv_pub_route route;
	r->read++;
	r->number++;
	if (kv_progress_due(&r->progress))
		kv_progress_show(&r->progress, bytes_taken(r), r->read, 0);
	note_first(r, rec->recv_ns);
	if (!meet(r, rec->src, rec->src_len, &route))
		return PLAY_STOP;
	if (route.bound && r->started) {
		/* A socket bound in mid-stream gets its own slow-joiner wait;
		 * the recorded pace goes on from after it. */
		if (!kv_pub_wait_until(r->pub, kv_monotonic_ns() + o->wait_ns))
			return PLAY_STOP;
		kv_pace_rebase(&r->pace);
	}
	if (route.over) {
		r->over_records++;
		return PLAY_ON;
	}
	if (!route.published) {
		r->unmapped++;
		return PLAY_ON;
	}
	if (rec->recv_ns < r->start_ns || rec->recv_ns >= r->end_ns) {
		r->outside++;
		return PLAY_ON;
	}
	if (rec->nframes == 0) {
		kv_progress_hide(&r->progress);
		if (!o->quiet)
			kv_warn("%s: record %llu: no frames to publish", in->name, (unsigned long long)rec->number);
		r->bad++;
		return PLAY_ON;
	}
	uint64_t due = kv_pace_due(&r->pace, rec->recv_ns, kv_monotonic_ns());
	if (!kv_pub_wait_until(r->pub, due))
		return PLAY_STOP;
	struct kv_err e = { 0 };
	if (!kv_pub_send(r->pub, route.src, rec, dropped(o, r->number), &e)) {
		kv_progress_hide(&r->progress);
		r->fatal = kv_err_print(&e);
		return PLAY_STOP;
	}
	r->taken++;
	return o->max_records && r->taken >= o->max_records ? PLAY_STOP : PLAY_ON;
}

/* Plays the records of one input from where it stands to its end. */
static enum play play_records(struct run *r, struct input *in, struct kv_cap_reader *rd)
{
	struct kv_record rec;
	enum play result = PLAY_ON;
	while (result == PLAY_ON && !kv_stop_signal) {
		switch (kv_cap_next(rd, &rec)) {
		case KV_CAP_RECORD:
			result = play_record(r, in, &rec);
			break;
		case KV_CAP_HEADER:
			kv_pace_rebase(&r->pace);   /* a new capture in a concatenation */
			break;
		case KV_CAP_SKIP:
			r->number++;
			r->bad++;
			kv_progress_hide(&r->progress);
			if (!r->o->quiet)
				kv_warn("%s: %s", in->name, rd->error);
			break;
		case KV_CAP_ERROR:
			if (!kv_stop_signal) {
				r->bad++;
				kv_progress_hide(&r->progress);
				kv_warn("%s: %s", in->name, rd->error);
			}
			return PLAY_ON;
		case KV_CAP_STOPPED:
			result = PLAY_STOP;
			break;
		case KV_CAP_EOF:
			return PLAY_ON;
		}
	}
	return PLAY_STOP;
}

/* One input, its bytes counted for the progress line. */
static enum play play_input(struct run *r, struct input *in)
{
	struct kv_cap_reader rd;
	kv_cap_open(&rd, in->fd, in->name);
	r->playing = &rd.in;
	if (!in->regular) {
		r->idle_fd = in->fd;
		rd.in.in.idle = on_idle;
		rd.in.in.idle_arg = r;
	}
	kv_pace_rebase(&r->pace);
	enum play result = play_records(r, in, &rd);
	r->bytes_done += kv_mps_taken(&rd.in);
	r->playing = NULL;
	kv_cap_close(&rd);
	return result;
}

static void play(struct run *r)
{
	for (;;) {
		uint64_t taken = r->taken, bad = r->bad;
		r->number = 0;
		for (size_t i = 0; i < r->nin; i++)
			if (play_input(r, &r->in[i]) == PLAY_STOP)
				return;
		r->complete = true;
		/* Another pass only when this one published and had no errors. */
		if (!r->o->loop || r->taken == taken || r->bad != bad)
			return;
		for (size_t i = 0; i < r->nin; i++)
			rewind_input(&r->in[i]);
	}
}

/* Whether a stop signal ended the replay before its end: the end of the
 * inputs or -c (with --loop and no -c, a signal is how a replay ends). */
static bool stopped_early(const struct run *r)
{
	const struct options *o = r->o;
	bool counted = o->max_records && r->taken >= o->max_records;
	return kv_stop_signal && !r->fatal && !counted && !(r->complete && !o->loop) && (!o->loop || o->max_records);
}

static void setup(struct run *r)
{
	const struct options *o = r->o;
	struct kv_err e = { 0 };
	bool ok = true;
	for (size_t i = 0; ok && i < o->nreplay_maps; i++) {
		char *src = kv_xstrdup(o->replay_maps[i]), *eq = strchr(src, '=');
		*eq = 0;
		ok = kv_pub_replay_map(r->pub, src, eq + 1, &e);
		free(src);
	}
	for (size_t i = 0; ok && i < o->nmaps; i++) {
		char *src = kv_xstrdup(o->maps[i]), *eq = strchr(src, '=');
		*eq = 0;
		ok = kv_pub_map(r->pub, src, eq + 1, &e);
		free(src);
	}
	if (ok)
		ok = kv_pub_start(r->pub, &e);
	if (!ok)
		kv_err_exit(&e);
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	kv_start(argv);
	parse_options(argc, argv, &o);
	struct kv_err e = { 0 };
	if (!kv_out_refuse_inputs("-o", o.output, argv + optind, (size_t)(argc - optind), &e))
		kv_err_exit(&e);
	kv_install_signals(false);

	struct run r = { .o = &o, .idle_fd = -1 };
	struct kv_out out;
	if (o.output) {
		if (!kv_out_open(&out, o.output, &e))
			return kv_err_print(&e);
		r.out = &out;
	}
	open_inputs(&r, argv + optind, (size_t)(argc - optind));
	r.pub = kv_pub_new(&o.pub);
	setup(&r);
	kv_pace_init(&r.pace, o.speed);
	/* the mapping goes to standard output with -o - */
	kv_progress_init(&r.progress, kv_progress_choose(o.progress, o.quiet, o.output && strcmp(o.output, "-") == 0),
			 "records", NULL);
	uint64_t total;
	bool known = kv_inputs_size(argv + optind, (size_t)(argc - optind), &total);
	/* --loop plays the inputs again and again: no end to measure against */
	kv_progress_set_total(&r.progress, known && !o.loop, total);

	/* Files are read once first: with a port base so that every socket is
	 * bound (and its mapping shown) before anything is published, with maps
	 * so that a map naming a source the input does not have is refused
	 * before anything is published.  Pipes are checked at their end. */
	bool all_regular = true;
	for (size_t i = 0; i < r.nin; i++)
		all_regular = all_regular && r.in[i].regular;
	if (o.pub.port_base >= 0 || o.nmaps || o.nreplay_maps)
		for (size_t i = 0; i < r.nin && !r.fatal && !kv_stop_signal; i++)
			if (r.in[i].regular)
				prescan(&r, &r.in[i]);
	if (all_regular && !r.fatal && !kv_stop_signal)
		refuse_unseen(&r);
	/* The slow-joiner wait for the sockets bound so far (later ones get their own). */
	uint64_t wait = kv_pub_sockets(r.pub) ? o.wait_ns : 0;
	if (!r.fatal && kv_pub_wait_until(r.pub, kv_monotonic_ns() + wait)) {
		r.started = true;
		play(&r);
	}
	kv_progress_end(&r.progress, bytes_taken(&r), r.read, 0);
	if (stopped_early(&r) && !o.quiet)
		kv_say_stopped(NULL, 0);
	if (!all_regular && r.complete && !r.fatal && !kv_stop_signal)
		r.unseen = report_unseen(&r);
	if (!r.fatal && !kv_stop_signal)
		kv_pub_wait_until(r.pub, kv_monotonic_ns() + o.linger_ns);

	int status = r.fatal;
	if (r.out && !kv_out_close(r.out, &e))
		status = kv_status_merge(status, kv_err_print(&e));
	if (!o.quiet) {
		kv_pub_print_stats(r.pub, o.ndrops > 0, stderr);
		if (r.unmapped)
			kv_warn("%llu records of sources not in --map skipped", (unsigned long long)r.unmapped);
		if (r.over_records)
			kv_warn("%llu records of sources beyond the first %u skipped", (unsigned long long)r.over_records,
				KV_PUB_MAX_SOURCES);
		if (o.verbose)
			kv_warn("%llu records read, %llu published, %llu outside the time window, %llu bad",
				(unsigned long long)r.read, (unsigned long long)r.taken,
				(unsigned long long)r.outside, (unsigned long long)r.bad);
	}
	kv_pub_free(r.pub, !kv_stop_signal && !r.fatal);
	for (size_t i = 0; i < r.nin; i++)
		kv_input_close(r.in[i].fd);
	free(r.in);
	free(o.maps);
	free(o.replay_maps);
	free(o.drops);
	return kv_status_merge(status, r.bad || r.unseen ? KV_EX_DATAERR : KV_EX_OK);
}
