/* curlapi's table from libcurl linked into the program (kvstat). */
#include "http/curlapi.h"

#include <string.h>

bool kv_curl_open(struct kv_curl *c, struct kv_err *e)
{
	*c = (struct kv_curl){ curl_global_init, curl_global_cleanup, curl_easy_init, curl_easy_cleanup,
			       curl_easy_setopt, curl_easy_getinfo, curl_easy_strerror, curl_multi_init,
			       curl_multi_cleanup, curl_multi_add_handle, curl_multi_remove_handle,
			       curl_multi_perform, curl_multi_poll, curl_multi_info_read, curl_slist_append,
			       curl_slist_free_all, NULL };
	return kv_curl_global_init(c, e);
}

void kv_curl_close(struct kv_curl *c)
{
	if (c->global_cleanup)
		c->global_cleanup();
	memset(c, 0, sizeof *c);
}
