#include "base/endpoint.h"
#include "base/util.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool kv_endpoint_host_port(const char *url, size_t len, char *host, size_t hostlen, long *port)
{
	static const char tcp[] = "tcp://";
	if (len < sizeof tcp - 1 || memcmp(url, tcp, sizeof tcp - 1) != 0)
		return false;
	const char *h = url + sizeof tcp - 1, *end = url + len, *hend, *colon;
	if (h < end && *h == '[') {
		hend = memchr(h, ']', (size_t)(end - h));
		if (!hend)
			return false;
		h++;
		colon = hend + 1 < end && hend[1] == ':' ? hend + 1 : NULL;
	} else {
		colon = NULL;
		for (const char *p = end; p > h; p--)
			if (p[-1] == ':') {
				colon = p - 1;
				break;
			}
		hend = colon ? colon : end;
	}
	/* tcp://iface;host:port names a source interface first: the host is after ';'. */
	const char *semi = memchr(h, ';', (size_t)(hend - h));
	if (semi)
		h = semi + 1;
	size_t n = (size_t)(hend - h);
	if (n == 0 || n >= hostlen)
		return false;
	memcpy(host, h, n);
	host[n] = 0;
	*port = -1;
	if (colon) {
		char digits[8];
		size_t dn = (size_t)(end - colon - 1);
		if (dn == 0 || dn >= sizeof digits)
			return false;
		memcpy(digits, colon + 1, dn);
		digits[dn] = 0;
		char *e;
		*port = strtol(digits, &e, 10);
		if (*e || *port < 0 || *port > 65535)
			return false;
	}
	return true;
}

const char *kv_endpoint_connect_problem(const char *url)
{
	const char *sep = strstr(url, "://");
	if (!sep || sep == url || strspn(url, "abcdefghijklmnopqrstuvwxyz") != (size_t)(sep - url))
		return "not a ZMQ endpoint (tcp://HOST:PORT, ipc://PATH, inproc://NAME)";
	if (strncmp(url, "tcp://", 6) != 0)
		return NULL; /* ipc:// and the rest: ZMQ checks them */
	char host[256];
	long port;
	if (!kv_endpoint_host_port(url, strlen(url), host, sizeof host, &port) || port < 1)
		return "a tcp endpoint to connect to needs a host and a port from 1 to 65535";
	return NULL;
}

bool kv_endpoint_resolves(const char *url, struct kv_err *e)
{
	char host[256];
	long port;
	if (strncmp(url, "tcp://", 6) != 0 || !kv_endpoint_host_port(url, strlen(url), host, sizeof host, &port) ||
	    strcmp(host, "*") == 0)
		return true;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	int rc = getaddrinfo(host, NULL, &hints, &res);
	if (res)
		freeaddrinfo(res);
	if (rc == 0)
		return true;
	return kv_err_set(e, KV_EX_UNAVAILABLE, "%s: cannot resolve the host (%s)", url,
			  rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
}

bool kv_endpoint_is_wildcard(const char *url)
{
	return strncmp(url, "tcp://*:", 8) == 0;
}

char *kv_endpoint_with_host(const char *url, const char *host)
{
	size_t n = strlen(url) + strlen(host) + 1;
	char *s = kv_xmalloc(n);
	snprintf(s, n, "tcp://%s%s", host, url + 7);
	return s;
}
