/* endpoint: ZMQ endpoint strings (tcp://host:port, tcp://[v6]:port, ipc://,
 * inproc://): their host and port, and the wildcard rule of kv-conductor's
 * Coordinator (a "*" host means the KV master service, kvsub(1) "ENVIRONMENT"). */
#ifndef KV_ENDPOINT_H
#define KV_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

/* Host (without brackets) and port of a tcp endpoint; false for other
 * transports or a malformed one.  port is -1 when the endpoint has none. */
bool kv_endpoint_host_port(const char *url, size_t len, char *host, size_t hostlen, long *port);
/* Why kvsub could never receive anything by connecting to url (no
 * "transport://" at all, or a tcp endpoint without a port in 1-65535), or
 * NULL.  ZMQ accepts a portless one and then waits for ever. */
const char *kv_endpoint_connect_problem(const char *url);
/* Whether the host of a tcp endpoint to connect to resolves; when it does
 * not, false with "URL: cannot resolve the host (why)" in e (69).  ZMQ
 * accepts such an endpoint and retries it silently for ever, so kvsub
 * warns, as kvstat does (the name may come to resolve later: no error). */
bool kv_endpoint_resolves(const char *url, struct kv_err *e);
/* True for a tcp endpoint whose host is "*". */
bool kv_endpoint_is_wildcard(const char *url);
/* The wildcard endpoint with host in place of "*"; a new string. */
char *kv_endpoint_with_host(const char *url, const char *host);

#endif
