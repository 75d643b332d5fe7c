// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sheep --nosync (tests): no fdatasync anywhere.  A file of its own so
 * that every part of the store reads it without calling up into plain.c.
 */
#include <stdbool.h>
#include "store_int.h"

static bool nosync;

void store_set_sync_off(bool off)
{
	__atomic_store_n(&nosync, off, __ATOMIC_RELAXED);
}

bool store_sync_off(void)
{
	return __atomic_load_n(&nosync, __ATOMIC_RELAXED);
}
