/* medium: storage medium names and their normal form (kvdecode(1) "Media").
 * The one place that knows that "NPU", "hbm" and "GPU" are all xpu. */
#ifndef KV_MEDIUM_H
#define KV_MEDIUM_H

#include <stddef.h>

enum kv_medium { KV_XPU = 0, KV_CPU = 1, KV_DISK = 2, KV_UNKNOWN = 3 };
#define KV_NMEDIA 3 /* media that hold blocks: xpu, cpu, disk */

enum kv_medium kv_medium_parse(const char *s, size_t n);
const char *kv_medium_name(enum kv_medium m);

#endif
