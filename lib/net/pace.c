#include "net/pace.h"

void kv_pace_init(struct kv_pace *p, double speed)
{
	*p = (struct kv_pace){ .speed = speed };
}

void kv_pace_rebase(struct kv_pace *p)
{
	p->based = false;
}

uint64_t kv_pace_due(struct kv_pace *p, uint64_t recv_ns, uint64_t now)
{
	if (p->speed <= 0)
		return now;
	if (!p->based || recv_ns < p->base_recv) {
		p->based = true;
		p->base_recv = recv_ns;
		p->base_mono = now > p->last_due ? now : p->last_due;
	}
	/* A double holds the offset exactly up to 2^53 ns (104 days); beyond, to
	 * within a part in 2^53, and the result is clamped rather than wrapped. */
	double off = (double)(recv_ns - p->base_recv) / p->speed;
	uint64_t due = off >= (double)(UINT64_MAX - p->base_mono) ? UINT64_MAX : p->base_mono + (uint64_t)off;
	if (due > p->last_due)
		p->last_due = due;
	return due;
}
