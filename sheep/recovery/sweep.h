/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stale sweeper (sweep.c): stale copies go as soon as every target of
 * their object holds it, whatever the state of recovery.
 */
#ifndef SHEEP_RECOVERY_SWEEP_H
#define SHEEP_RECOVERY_SWEEP_H

#include <stdbool.h>

/* start the periodic rounds (main loop, once) */
void stale_sweep_start(void);
/* the stale area is over its bound (a quarter of the store's disk) */
bool stale_over_bound(void);

#endif
