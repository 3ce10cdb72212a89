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
}

void kv_metrics_free(struct kv_metrics *m)
{
	if (m->f) {
		fclose(m->f);
		m->file.fd = -1;
		kv_product_abort(&m->file);
	}
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
	/* node_exporter's textfile collector reads only *.prom files: the
	 * temporary name (FILE.tmp.XXXXXX) is never half-read.  Readable by
	 * the collector whatever the umask. */
	if (!kv_product_open(&m->file, m->path, 0644, e))
		return false;
	m->f = fdopen(m->file.fd, "w");
	if (!m->f) {
		int errnum = errno;
		kv_product_abort(&m->file);
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
	errno = 0;
	if (fflush(f) != 0 || ferror(f))
		errnum = errno ? errno : EIO;
	if (fclose(f) != 0 && !errnum)
		errnum = errno;
	m->file.fd = -1;   /* closed with f */
	return kv_product_close(&m->file, errnum, false, e);
}
