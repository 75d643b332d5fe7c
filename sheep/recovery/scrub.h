/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Scrub (scrub.c): verify every local object against its checksums in
 * the background and repair failing blocks from another target; repair
 * at once an object a read found failing.
 */
#ifndef SHEEP_RECOVERY_SCRUB_H
#define SHEEP_RECOVERY_SCRUB_H

#include <stdbool.h>
#include <stdint.h>

struct scrub_stat {
	uint64_t running;
	uint64_t total;		/* objects listed when it started */
	uint64_t scanned;	/* objects verified */
	uint64_t damaged;	/* objects that failed their checksums */
	uint64_t repaired;	/* of them, repaired from another copy */
	uint64_t unrepaired;
	uint64_t detected;	/* mismatches seen by any read since start-up */
	uint64_t healed;	/* since start-up: repaired after a failed read */
	uint64_t unhealed;	/* ... and not repaired */
	uint64_t diverged;	/* this scrub: objects whose copies differed */
	uint64_t reconciled;	/* ... and were made one */
};

/* SD_RES_*: start a scrub (a running one goes on) */
int scrub_start(void);
void scrub_stop(void);
void scrub_get_stat(struct scrub_stat *st);
/*
 * a read or write of @oid (strip @idx, OBJ_IDX_REPLICA for a replica)
 * failed its checksums: repair it soon
 */
void scrub_heal(uint64_t oid, uint8_t idx);

#endif
