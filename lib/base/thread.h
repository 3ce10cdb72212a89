/* thread: the two things the programs' helper threads (kvmatch's decoding
 * ahead and its snapshot's engine hashes, kvquery's parsing ahead) do
 * alike: they are started taking no
 * signal, so that every signal reaches the program's thread, where the
 * handlers set their flags and the program acts between its items; and
 * the program waits for them a KV_IDLE_TICK_MS at a time, so that between
 * waits it can do its idle work and see a stop signal. */
#ifndef KV_THREAD_H
#define KV_THREAD_H

#include <pthread.h>
#include <stdbool.h>

/* pthread_create with every signal blocked in the new thread; its result. */
int kv_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);
/* pthread_cond_wait for at most KV_IDLE_TICK_MS (m locked, as it is again
 * on return); true when that time passed. */
bool kv_cond_wait_tick(pthread_cond_t *c, pthread_mutex_t *m);

#endif
