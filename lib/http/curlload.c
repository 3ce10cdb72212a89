/* curlapi's table from libcurl.so.4 loaded when it is opened (kvquery:
 * --against alone speaks HTTP).  The library is left loaded until the
 * program exits: libraries libcurl brings (TLS among them) may have
 * registered exit handlers, which must not outlive their code. */
#include "http/curlapi.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

/* libcurl's soname since 7.16 (2006), as the program would have linked it. */
#define CURL_SONAME "libcurl.so.4"

/* POSIX: a function's address comes from dlsym as a void *, of the same size. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym's functions fit a void *");

static const struct {
	const char *name;
	size_t at;
} functions[] = {
	{ "curl_global_init", offsetof(struct kv_curl, global_init) },
	{ "curl_global_cleanup", offsetof(struct kv_curl, global_cleanup) },
	{ "curl_easy_init", offsetof(struct kv_curl, easy_init) },
	{ "curl_easy_cleanup", offsetof(struct kv_curl, easy_cleanup) },
	{ "curl_easy_setopt", offsetof(struct kv_curl, easy_setopt) },
	{ "curl_easy_getinfo", offsetof(struct kv_curl, easy_getinfo) },
	{ "curl_easy_strerror", offsetof(struct kv_curl, easy_strerror) },
	{ "curl_multi_init", offsetof(struct kv_curl, multi_init) },
	{ "curl_multi_cleanup", offsetof(struct kv_curl, multi_cleanup) },
	{ "curl_multi_add_handle", offsetof(struct kv_curl, multi_add_handle) },
	{ "curl_multi_remove_handle", offsetof(struct kv_curl, multi_remove_handle) },
	{ "curl_multi_perform", offsetof(struct kv_curl, multi_perform) },
	{ "curl_multi_poll", offsetof(struct kv_curl, multi_poll) },
	{ "curl_multi_info_read", offsetof(struct kv_curl, multi_info_read) },
	{ "curl_slist_append", offsetof(struct kv_curl, slist_append) },
	{ "curl_slist_free_all", offsetof(struct kv_curl, slist_free_all) },
};

static bool cannot_load(struct kv_err *e)
{
	const char *why = dlerror();
	return kv_err_set(e, KV_EX_SOFTWARE, "cannot load libcurl: %s", why ? why : CURL_SONAME);
}

bool kv_curl_open(struct kv_curl *c, struct kv_err *e)
{
	memset(c, 0, sizeof *c);
	void *lib = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return cannot_load(e);
	for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) {
		void *f = dlsym(lib, functions[i].name);
		if (!f) {
			memset(c, 0, sizeof *c);
			return cannot_load(e);
		}
		memcpy((char *)c + functions[i].at, &f, sizeof f);
	}
	c->lib = lib;
	if (!kv_curl_global_init(c, e)) {
		memset(c, 0, sizeof *c);
		return false;
	}
	return true;
}

void kv_curl_close(struct kv_curl *c)
{
	if (c->global_cleanup)
		c->global_cleanup();
	memset(c, 0, sizeof *c); /* c->lib stays loaded (see above) */
}
