/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The epoch records a node lacks (it was away while they were made),
 * fetched from the members (cluster.md §4.3): recovery needs them to find
 * where an object was placed before.
 */
#ifndef SHEEP_GROUP_EPOCH_FETCH_H
#define SHEEP_GROUP_EPOCH_FETCH_H

#include <stdbool.h>

/*
 * Fetch every epoch record older than the current epoch that is missing
 * here; @done runs once none is missing or none can be had.  While a
 * fetch runs, a second call makes it look again when it ends.
 */
void epoch_fetch_start(void (*done)(void));
/* is a fetch running (recovery must wait for it)? */
bool epoch_fetch_busy(void);

#endif
