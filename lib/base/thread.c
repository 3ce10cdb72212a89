/* thread: helper threads started and waited for (thread.h says what it
 * owns). */
#include "base/thread.h"
#include "base/util.h"

#include <errno.h>
#include <signal.h>
#include <time.h>

int kv_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, was;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &was);
	int r = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	return r;
}

bool kv_cond_wait_tick(pthread_cond_t *c, pthread_mutex_t *m)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += KV_IDLE_TICK_MS * 1000000L;
	t.tv_sec += t.tv_nsec / 1000000000L;
	t.tv_nsec %= 1000000000L;
	return pthread_cond_timedwait(c, m, &t) == ETIMEDOUT;
}
