#include "base/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends the formatted message and, with errnum, ": strerror(errnum)",
 * then the NUL that ends it. */
static void add(struct kv_err *e, int status, int errnum, const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	int k = vsnprintf(NULL, 0, fmt, ap);
	size_t n = k > 0 ? (size_t)k : 0;
	const char *why = errnum ? strerror(errnum) : NULL;
	size_t extra = why ? strlen(why) + 2 : 0;
	e->text = kv_xgrow(e->text, &e->cap, e->len + n + extra + 1, 1);
	vsnprintf(e->text + e->len, n + 1, fmt, again);
	va_end(again);
	e->len += n;
	if (why)
		e->len += (size_t)sprintf(e->text + e->len, ": %s", why);
	e->text[e->len++] = 0;
	e->status = kv_status_merge(e->status, status);
}

bool kv_err_set(struct kv_err *e, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add(e, status, 0, fmt, ap);
	va_end(ap);
	return false;
}

bool kv_err_set_errno(struct kv_err *e, int status, const char *fmt, ...)
{
	int errnum = errno;
	va_list ap;
	va_start(ap, fmt);
	add(e, status, errnum, fmt, ap);
	va_end(ap);
	errno = errnum;
	return false;
}

const char *kv_err_msg(const struct kv_err *e)
{
	return e->len ? e->text : "";
}

void kv_err_clear(struct kv_err *e)
{
	free(e->text);
	memset(e, 0, sizeof *e);
}

int kv_err_print(struct kv_err *e)
{
	for (size_t at = 0; at < e->len; at += strlen(e->text + at) + 1)
		kv_warn("%s", e->text + at);
	int status = e->status;
	kv_err_clear(e);
	return status;
}

void kv_err_exit(struct kv_err *e)
{
	int status = kv_err_print(e);
	if (status == KV_EX_USAGE)
		kv_try_help();
	exit(status);
}
