/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reconciling the copies of one object that differ without rot
 * (reconcile.c), for the scrub.
 */
#ifndef SHEEP_RECOVERY_RECONCILE_H
#define SHEEP_RECOVERY_RECONCILE_H

#include <stdbool.h>
#include <stdint.h>

enum {
	RECONCILE_SAME,		/* every copy the same */
	RECONCILE_DONE,		/* copies differed; now they are one */
	RECONCILE_FAILED,	/* copies differed; the repair failed */
	RECONCILE_SKIPPED,	/* not comparable now (missing, rot, epoch) */
};

/* is this node the one to compare @oid's copies (its first target)? */
bool reconcile_wanted(uint64_t oid);
/* compare and reconcile; @done gets a RECONCILE_* on the main loop */
void reconcile_start(uint64_t oid, void (*done)(int outcome));

#endif
