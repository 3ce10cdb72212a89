/* qlines (kvquery's query lines): lines parsed ahead on threads are the
 * items of lines parsed in turn, in the same order with the same contents
 * (every field of a query, bad and too long lines, an input that cannot be
 * opened, an empty one, a last line without its newline), however many
 * threads and however slowly the program takes them; they are parsed
 * ahead only where every input is a regular file; a stop signal ends them;
 * and kv_qline_copy copies every field a parse fills. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "query/qlines.h"
#include "query/queryline.h"
#include "unit.h"

#define MAX_LINE 4096

static char dir[256], mixed[300], many[300], empty[300], missing[300];

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) == EOF || fclose(f) != 0)
		abort();
}

/* Lines of every kind: queries with every field, bad ones, one too long,
 * the last without its newline. */
static void write_mixed(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		abort();
	fputs("{\"model\":\"m\",\"tenant_id\":\"t\",\"block_size\":4,\"token_ids\":[1,2,3,4,5,6,7,8,9]}\n", f);
	fputs("not json\n\n", f);
	fputs("{\"block_hashes\":[\"0xff\",18446744073709551615,3],\"model\":\"m2\",\"lora_name\":\"l\","
	      "\"cache_salt\":\"s\",\"instance_id\":\"i\"}\n", f);
	fputs("[10, 20, 30]\n", f);
	fputs("{\"seq_hashes\":[5,6],\"cache_namespace\":\"ns\"}\n", f);
	fputs("{\"token_ids\":[", f);
	for (int i = 0; i < MAX_LINE; i++)
		fprintf(f, "%d,", i);
	fputs("1]}\n", f);
	fputs("{\"token_ids\":[1],\"block_hashes\":[2]}\n", f);
	fputs("1 2 3 4", f);
	if (fclose(f) != 0)
		abort();
}

/* Enough lines, of all lengths, to go round the ring many times. */
static void write_many(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		abort();
	for (int l = 0; l < 3000; l++) {
		if (l % 97 == 5) {
			fputs("{\"token_ids\":[1,2,\n", f);
			continue;
		}
		size_t n = 1 + (size_t)(unit_rand() % (l % 10 == 0 ? 900 : 40));
		fprintf(f, "{\"model\":\"m%d\",\"token_ids\":[", l % 7);
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)(unit_rand() % 200000));
		fputs("]}\n", f);
	}
	if (fclose(f) != 0)
		abort();
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/kvtools-unit-qlines-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		abort();
	snprintf(mixed, sizeof mixed, "%s/mixed.jsonl", dir);
	snprintf(many, sizeof many, "%s/many.jsonl", dir);
	snprintf(empty, sizeof empty, "%s/empty.jsonl", dir);
	snprintf(missing, sizeof missing, "%s/missing.jsonl", dir);
	write_mixed(mixed);
	write_many(many);
	write_text(empty, "");
}

static void cleanup(void)
{
	unlink(mixed);
	unlink(many);
	unlink(empty);
	rmdir(dir);
}

static const char *or_none(const char *s)
{
	return s ? s : "(none)";
}

/* Every field of an item, as a line of text. */
static void describe(char **text, size_t *len, size_t *cap, const struct kv_qitem *it)
{
	char line[1024];
	int n = snprintf(line, sizeof line, "%d %s %llu err=%d why=%s e=%s", (int)it->kind, or_none(it->file),
			 (unsigned long long)it->lineno, it->err, or_none(it->why), or_none(it->e.text));
	if (it->kind == KV_QI_QUERY) {
		const struct kv_qline *q = it->q;
		uint64_t ts = 0, hs = 0;
		for (size_t i = 0; i < q->ntokens; i++)
			ts = ts * 31 + q->tokens[i];
		for (size_t i = 0; i < q->nhashes; i++)
			hs = hs * 31 + q->hashes[i];
		n += snprintf(line + n, sizeof line - (size_t)n,
			      " hash=%d seq=%d has=%d%d%d model=%s tenant=%s lora=%s salt=%s instance=%s ns=%s bs=%llu "
			      "tokens=%zu/%llx hashes=%zu/%llx",
			      q->by_hash, q->by_seq, q->has_model, q->has_tenant, q->has_block_size, or_none(q->model),
			      or_none(q->tenant), or_none(q->lora), or_none(q->salt), or_none(q->instance),
			      or_none(q->cache_namespace), (unsigned long long)q->block_size, q->ntokens,
			      (unsigned long long)ts, q->nhashes, (unsigned long long)hs);
	}
	line[n++] = '\n';
	*text = kv_xgrow(*text, cap, *len + (size_t)n + 1, 1);
	memcpy(*text + *len, line, (size_t)n);
	*len += (size_t)n;
	(*text)[*len] = 0;
}

/* Every item until the end, as text, with the number of threads that
 * parsed them; lag: the program takes its time over each. */
static char *read_all(char *const *files, size_t nfiles, unsigned jobs, bool lag, unsigned *threads)
{
	struct kv_qlines_opts o = { .jobs = jobs, .max_line = MAX_LINE };
	struct kv_qlines *l = kv_qlines_new(files, nfiles, &o);
	*threads = kv_qlines_jobs(l);
	char *text = NULL;
	size_t len = 0, cap = 0;
	struct kv_qitem it;
	unsigned k = 0;
	while (kv_qlines_next(l, &it)) {
		if (lag && ++k % 50 == 0)
			usleep(200); /* the threads go on meanwhile, and fill the ring */
		describe(&text, &len, &cap, &it);
		kv_err_clear(&it.e);
	}
	kv_qlines_free(l);
	return text;
}

static void same_items_ahead(void)
{
	char *files[] = { mixed, missing, empty, many, mixed };
	unsigned threads;
	char *direct = read_all(files, 5, 0, false, &threads);
	ASSERT_EQ_U64(threads, 0);
	ASSERT(strstr(direct, "mixed.jsonl 2 err=0 why=lexical error"));
	ASSERT(strstr(direct, "mixed.jsonl 3 err=0 why=empty query"));
	ASSERT(strstr(direct, "\n2 ") && strstr(direct, "mixed.jsonl 7 err=0 why=(none) e=(none)\n")); /* too long */
	ASSERT(strstr(direct, "mixed.jsonl 8 err=0 why=both token_ids and block_hashes"));
	ASSERT(strstr(direct, "\n3 ") && strstr(direct, "missing.jsonl: No such file or directory\n"));
	ASSERT(strstr(direct, "hash=1 seq=0 has=100 model=m2 tenant=(none) lora=l salt=s instance=i ns=(none)"));
	ASSERT(strstr(direct, "hash=1 seq=1 has=000") && strstr(direct, "ns=ns"));
	ASSERT(strstr(direct, "mixed.jsonl 9 err=0 why=(none) e=(none) hash=0 seq=0 has=000 model=(none) tenant=(none) "
			      "lora=(none) salt=(none) instance=(none) ns=(none) bs=0 tokens=4/"));
	for (unsigned jobs = 1; jobs <= 5; jobs += 2)
		for (int lag = 0; lag < 2; lag++) {
			char *ahead = read_all(files, 5, jobs, lag, &threads);
			ASSERT_EQ_U64(threads, jobs);
			ASSERT_EQ_STR(ahead, direct);
			free(ahead);
		}
	free(direct);
}

/* Many runs of many small chunks: none handed out twice or lost. */
static void same_items_many(void)
{
	char *files[] = { many };
	unsigned threads;
	char *direct = read_all(files, 1, 0, false, &threads);
	for (int run = 0; run < 5; run++) {
		char *ahead = read_all(files, 1, 2 + (unsigned)run % 3, false, &threads);
		ASSERT_EQ_STR(ahead, direct);
		free(ahead);
	}
	free(direct);
}

static void ahead_only_of_regular_files(void)
{
	int p[2];
	ASSERT(pipe(p) == 0);
	int saved = dup(0);
	dup2(p[0], 0);
	char *std[] = { mixed, "-" };
	struct kv_qlines_opts o = { .jobs = 2 };
	struct kv_qlines *l = kv_qlines_new(std, 2, &o);
	unsigned threads = kv_qlines_jobs(l);
	kv_qlines_free(l);
	dup2(saved, 0);
	close(saved);
	close(p[0]);
	close(p[1]);
	ASSERT_EQ_U64(threads, 0);
}

/* A stop signal: the items parsed so far, then KV_QI_STOPPED, then none. */
static void stopped_by_a_signal(void)
{
	char *files[] = { many, mixed };
	for (unsigned jobs = 0; jobs <= 2; jobs += 2) {
		struct kv_qlines_opts o = { .jobs = jobs };
		struct kv_qlines *l = kv_qlines_new(files, 2, &o);
		struct kv_qitem it;
		ASSERT(kv_qlines_next(l, &it) && it.kind == KV_QI_QUERY && it.lineno == 1);
		kv_stop_signal = 1;
		size_t after = 0;
		bool stopped = false;
		while (kv_qlines_next(l, &it)) {
			ASSERT(!stopped);
			stopped = it.kind == KV_QI_STOPPED;
			after++;
		}
		kv_stop_signal = 0;
		kv_qlines_free(l);
		ASSERT(stopped);
		ASSERT(after < 3000); /* the rest was never read */
	}
}

/* The program ends before the inputs do, the threads waiting for room. */
static void freed_before_the_end(void)
{
	char *files[] = { many };
	struct kv_qlines_opts o = { .jobs = 3 };
	struct kv_qlines *l = kv_qlines_new(files, 1, &o);
	struct kv_qitem it;
	ASSERT(kv_qlines_next(l, &it));
	usleep(20000);
	kv_qlines_free(l);
}

static void *from_block(void *arg, size_t n)
{
	char **at = arg;
	void *p = *at;
	*at += (n + 7) & ~(size_t)7;
	return p;
}

/* The copy holds what the parse did, after the parser has parsed another
 * line over it. */
static void copy_outlives_the_parse(void)
{
	struct kv_qparser *p = kv_qparser_new();
	struct kv_qline q = { 0 }, c;
	const char *line = "{\"model\":\"m\",\"tenant_id\":\"t\",\"lora_name\":\"l\",\"cache_salt\":\"s\","
			   "\"instance_id\":\"i\",\"cache_namespace\":\"n\",\"block_size\":2,\"token_ids\":[7,8,9]}";
	ASSERT(kv_qparse(p, line, strlen(line), &q));
	static uint64_t block[64];
	char *at = (char *)block;
	kv_qline_copy(&q, &c, from_block, &at);
	const char *other = "{\"model\":\"xx\",\"tenant_id\":\"yy\",\"token_ids\":[1,1,1,1]}";
	ASSERT(kv_qparse(p, other, strlen(other), &q));
	ASSERT_EQ_STR(c.model, "m");
	ASSERT_EQ_STR(c.tenant, "t");
	ASSERT_EQ_STR(c.lora, "l");
	ASSERT_EQ_STR(c.salt, "s");
	ASSERT_EQ_STR(c.instance, "i");
	ASSERT_EQ_STR(c.cache_namespace, "n");
	ASSERT(c.has_model && c.has_tenant && c.has_block_size && !c.by_hash && !c.by_seq);
	ASSERT_EQ_U64(c.block_size, 2);
	ASSERT_EQ_U64(c.ntokens, 3);
	ASSERT(c.tokens[0] == 7 && c.tokens[1] == 8 && c.tokens[2] == 9);
	ASSERT(c.tokens != q.tokens && (char *)c.tokens >= (char *)block && (char *)c.tokens < (char *)(block + 64));
	ASSERT_EQ_U64(c.nhashes, 0);
	free(q.tokens);
	free(q.hashes);
	kv_qparser_free(p);
}

int main(void)
{
	setup();
	RUN(same_items_ahead);
	RUN(same_items_many);
	RUN(ahead_only_of_regular_files);
	RUN(stopped_by_a_signal);
	RUN(freed_before_the_end);
	RUN(copy_outlives_the_parse);
	cleanup();
	return unit_done();
}
