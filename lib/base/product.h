/* product: where a file a program writes goes, and a file written whole
 * and put in place at once (a snapshot, a metrics exposition).
 *
 * What a user names is never destroyed (kvtools(7) "Conventions"): a
 * symbolic link is followed to its target, which is what gets written (the
 * link stays); a regular file, or none yet, is replaced by rename from a
 * temporary file beside it, so that a reader sees the old file or the new
 * one, never half; anything else (a character device such as /dev/null, a
 * fifo) is opened and written to directly, never renamed over, since
 * renaming would replace the device node itself.  A directory and a socket
 * cannot be written to: refused with a message. */
#ifndef KV_PRODUCT_H
#define KV_PRODUCT_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/err.h"

/* The file path names for writing: its symbolic links followed, also to a
 * target that is not there yet.  Malloc'd; NULL when a link cannot be read
 * or they loop (errno says why). */
char *kv_path_target(const char *path);
/* Whether a and b name one file: the same device and inode when both
 * exist, the same place when neither does yet (their targets' directories
 * resolved: x, ./x and a link to x are one file). */
bool kv_path_same(const char *a, const char *b);
/* False with "PATH: why" (74) when no file can be written at path: a
 * directory, a socket, a device or fifo that may not be written, or (for a
 * file there or to be made) a directory that may not be written.  Asked
 * before the work whose product it is; "-" and NULL are standard output. */
bool kv_path_check_writable(const char *path, struct kv_err *e);

struct kv_product {
	const char *path;  /* as named, for messages */
	char *target;      /* path with its links followed */
	char *tmp;         /* the temporary file; NULL when written directly */
	int fd;            /* where to write; -1 once closed */
};

/* Opens the product named path for writing to fd: a temporary file with
 * mode bits mode (0: 0666 less the umask) beside the target, or the target
 * itself when it is a device or a fifo (which may wait for a reader).
 * False with "PATH: why" (74), nothing left behind. */
bool kv_product_open(struct kv_product *p, const char *path, mode_t mode, struct kv_err *e);
/* Puts the product in place: err is the errno of a write that failed (0:
 * none), and then nothing is replaced and the temporary file is removed.
 * durable: the file is synced before the rename and its directory after,
 * so that the new name survives a crash of the machine.  The caller may
 * have closed fd already (then p->fd is -1).  False with "PATH: why" (74);
 * "PATH: syncing its directory: why" when only that failed, the new file
 * being in place. */
bool kv_product_close(struct kv_product *p, int err, bool durable, struct kv_err *e);
/* Gives up: nothing is replaced, the temporary file is removed. */
void kv_product_abort(struct kv_product *p);

#endif
