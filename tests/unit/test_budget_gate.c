// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * front/budget_gate.c: threads charge the request budget through the
 * loop.  A take that fits is granted at once; one that does not waits
 * until requests give budget back; a small take does not pass a large
 * one queued before it; a put gives the budget back.  The loop runs in a
 * thread of its own, as the daemon's does for the S3 workers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <unistd.h>
#include <cmocka.h>

#include "event.h"
#include "core/core.h"
#include "core/request.h"
#include "front/budget_gate.h"

#define MiB	(UINT64_C(1) << 20)

static pthread_t loop_thread;

static void *run_loop(void *arg)
{
	event_loop_run(sys.loop);
	return NULL;
}

/* run @fn(@arg) on the loop thread and wait for it */
struct on_loop {
	struct loop_call call;
	void (*fn)(uint64_t);
	uint64_t arg;
	volatile bool done;
};

static void on_loop_fn(struct loop_call *c)
{
	struct on_loop *o = container_of(c, struct on_loop, call);

	o->fn(o->arg);
	__atomic_store_n(&o->done, true, __ATOMIC_RELEASE);
}

static void on_loop(void (*fn)(uint64_t), uint64_t arg)
{
	struct on_loop o = { .call.fn = on_loop_fn, .fn = fn, .arg = arg };

	event_loop_call(sys.loop, &o.call);
	while (!__atomic_load_n(&o.done, __ATOMIC_ACQUIRE))
		usleep(1000);
}

static uint64_t used_now;

static void read_used(uint64_t unused)
{
	uint64_t limit;

	budget_read(&used_now, &limit);
}

static uint64_t used(void)
{
	on_loop(read_used, 0);
	return used_now;
}

struct taker {
	pthread_t t;
	uint64_t bytes;
	volatile bool granted;
};

static void *take(void *arg)
{
	struct taker *k = arg;

	budget_gate_take(k->bytes);
	__atomic_store_n(&k->granted, true, __ATOMIC_RELEASE);
	return NULL;
}

static void start_take(struct taker *k, uint64_t bytes)
{
	k->bytes = bytes;
	k->granted = false;
	assert_int_equal(pthread_create(&k->t, NULL, take, k), 0);
}

static bool granted_within(struct taker *k, int ms)
{
	for (int i = 0; i < ms; i++) {
		if (__atomic_load_n(&k->granted, __ATOMIC_ACQUIRE))
			return true;
		usleep(1000);
	}
	return __atomic_load_n(&k->granted, __ATOMIC_ACQUIRE);
}

static void init_gate(uint64_t unused)
{
	budget_gate_init();
}

static int setup(void **state)
{
	sys.loop = event_loop_create();
	if (!sys.loop)
		return -1;
	/* clients may hold three quarters: 3 MiB */
	budget_set_limit(4 * MiB);
	if (pthread_create(&loop_thread, NULL, run_loop, NULL))
		return -1;
	on_loop(init_gate, 0);
	return 0;
}

static int teardown(void **state)
{
	event_loop_stop(sys.loop);
	pthread_join(loop_thread, NULL);
	event_loop_destroy(sys.loop);
	return 0;
}

static void test_take_put(void **state)
{
	struct taker a;

	start_take(&a, MiB);
	assert_true(granted_within(&a, 5000));
	pthread_join(a.t, NULL);
	assert_true(used() == MiB);
	budget_gate_put(MiB);
	assert_true(used() == 0);
}

/* requests (charged on the loop) hold the budget: a take waits for them */
static void test_waits_for_requests(void **state)
{
	struct taker a;

	on_loop(budget_charge, 5 * MiB / 2);
	start_take(&a, MiB);
	assert_false(granted_within(&a, 300));
	on_loop(budget_release, 5 * MiB / 2);
	assert_true(granted_within(&a, 5000));
	pthread_join(a.t, NULL);
	assert_true(used() == MiB);
	budget_gate_put(MiB);
	assert_true(used() == 0);
}

/* a small take queued after a large one does not pass it */
static void test_in_order(void **state)
{
	struct taker big, small;

	on_loop(budget_charge, 2 * MiB);
	start_take(&big, 2 * MiB);
	assert_false(granted_within(&big, 200));
	start_take(&small, MiB / 2);
	/* 2.5 MiB would fit, but the big one asked first */
	assert_false(granted_within(&small, 300));
	on_loop(budget_release, 2 * MiB);
	assert_true(granted_within(&big, 5000));
	assert_true(granted_within(&small, 5000));
	pthread_join(big.t, NULL);
	pthread_join(small.t, NULL);
	assert_true(used() == 2 * MiB + MiB / 2);
	budget_gate_put(2 * MiB);
	budget_gate_put(MiB / 2);
	assert_true(used() == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_put),
		cmocka_unit_test(test_waits_for_requests),
		cmocka_unit_test(test_in_order),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
