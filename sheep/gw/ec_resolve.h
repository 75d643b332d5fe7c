/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fate of an erasure-coded write whose gateway is gone
 * (doc/erasure-coding.md §3): from what the reachable targets say about
 * version v, whether it is committed, aborted, or must wait.
 */
#ifndef SHEEP_GW_EC_RESOLVE_H
#define SHEEP_GW_EC_RESOLVE_H

#include <stdbool.h>
#include <stdint.h>
#include "store/store.h"

/* one target's strip as it answered (EC_STATE), for version v */
enum ec_holds {
	EC_UNKNOWN,	/* unreachable, no strip, or its state unreadable */
	EC_LACKS,	/* never prepared v, aborted it, or was cut short */
	EC_HOLDS,	/* prepared v whole (its record of v is complete) */
	EC_FINAL,	/* committed v or a later version */
};

enum ec_verdict {
	EC_COMMIT,
	EC_ABORT,
	EC_WAIT,	/* too few targets answer to know */
};

/* what @st says about @v */
enum ec_holds ec_holds_of(const struct strip_state *st, uint64_t v);

/*
 * The verdict on v from @n = D+P targets' answers.  It relies on the
 * gateway's order: a PREPARE of v goes out only after every target
 * prepared v-1, so at most one version of an object is in doubt (the
 * newest pending anywhere) and the client was told v is written only
 * after all D+P targets held it.
 */
enum ec_verdict ec_resolve(int d, int n, const enum ec_holds *t);

/* the newest version pending on any of @n answers (0: none) */
uint64_t ec_newest_pending(const struct strip_state *st, int n,
			   const bool *answered);

#endif
