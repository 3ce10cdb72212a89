#include "base/metrics.h"
#include "base/err.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void kv_metrics_init(struct kv_metrics *m, const char *path, uint64_t interval_ns)
{
	memset(m, 0, sizeof *m);
	m->path = path;
	m->interval_ns = interval_ns ? interval_ns : KV_METRICS_INTERVAL_DEFAULT_NS;
	size_t n = strlen(path) + 16;
	m->tmp = kv_xmalloc(n);
	/* node_exporter's textfile collector reads only *.prom files: a
	 * temporary name without that suffix is never half-read. */
	snprintf(m->tmp, n, "%s.tmp.XXXXXX", path);
}

void kv_metrics_free(struct kv_metrics *m)
{
	if (m->f) {
		fclose(m->f);
		unlink(m->tmp);
	}
	free(m->tmp);
	memset(m, 0, sizeof *m);
}

bool kv_metrics_due(struct kv_metrics *m)
{
	uint64_t now = kv_monotonic_ns();
	if (now < m->next_ns)
		return false;
	m->next_ns = now + m->interval_ns;
	return true;
}

bool kv_metrics_begin(struct kv_metrics *m, struct kv_err *e)
{
	size_t n = strlen(m->path) + 16;
	snprintf(m->tmp, n, "%s.tmp.XXXXXX", m->path);
	int fd = mkstemp(m->tmp);
	if (fd < 0)
		return kv_err_set_errno(e, KV_EX_IOERR, "%s", m->path);
	m->f = fdopen(fd, "w");
	if (!m->f) {
		int errnum = errno;
		close(fd);
		unlink(m->tmp);
		errno = errnum;
		return kv_err_set_errno(e, KV_EX_IOERR, "%s", m->path);
	}
	return true;
}

void kv_metrics_family(struct kv_metrics *m, const char *name, const char *type, const char *help)
{
	fprintf(m->f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void label_value(FILE *f, const char *v)
{
	fputc('"', f);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f), fputc(*v, f);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

void kv_metrics_sample(struct kv_metrics *m, const char *name, double value, const char *const *labels)
{
	fputs(name, m->f);
	for (size_t i = 0; labels && labels[i]; i += 2) {
		fputs(i ? "," : "{", m->f);
		fputs(labels[i], m->f);
		fputc('=', m->f);
		label_value(m->f, labels[i + 1] ? labels[i + 1] : "");
		if (!labels[i + 2])
			fputc('}', m->f);
	}
	if (isnan(value))
		fputs(" NaN\n", m->f);
	else if (value == floor(value) && fabs(value) < 9e15)
		fprintf(m->f, " %.0f\n", value);
	else
		fprintf(m->f, " %.15g\n", value);
}

bool kv_metrics_commit(struct kv_metrics *m, struct kv_err *e)
{
	FILE *f = m->f;
	m->f = NULL;
	int errnum = 0;
	if (fflush(f) != 0 || ferror(f))
		errnum = errno ? errno : EIO;
	if (fchmod(fileno(f), 0644) != 0 && !errnum)
		errnum = errno;
	if (fclose(f) != 0 && !errnum)
		errnum = errno;
	if (!errnum && rename(m->tmp, m->path) != 0)
		errnum = errno;
	if (errnum) {
		unlink(m->tmp);
		errno = errnum;
		return kv_err_set_errno(e, KV_EX_IOERR, "%s", m->path);
	}
	return true;
}
