// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Resolving an erasure-coded write in doubt (see ec_resolve.h).  Why the
 * rules are safe:
 *
 * - A COMMIT of v reached some target only after all D+P held v: if any
 *   target is FINAL, v was complete everywhere, and is committed.
 * - Else nothing is decided without answers from a majority of the D+P
 *   targets, so that any two resolutions share a target and the second
 *   sees what the first did: a COMMIT leaves every target it asked FINAL,
 *   an ABORT leaves every one LACKS (it marks v aborted there, so that a
 *   late PREPARE of v cannot make it HOLD).  Without that, 2:2 could
 *   abort on targets 2 and 3 and commit later on 0 and 1.  With P < D a
 *   majority is at most D targets: P failures never make a write wait.
 * - A target that answers and LACKS v never told the gateway it had v,
 *   so the client was never told v was written: v may be aborted, and no
 *   target can have committed it (by the first rule).
 * - Otherwise every answering target HOLDS v; with D of them the stripe
 *   decodes to v, which is committed (the client may not have been told:
 *   a write whose outcome it never learnt may land).  A target that did
 *   not answer is rebuilt from those D when it returns.
 * - With fewer than D holders and no LACKS, nothing decodes yet: wait.
 */
#include "gw/ec_resolve.h"

enum ec_holds ec_holds_of(const struct strip_state *st, uint64_t v)
{
	if (st->committed >= v)
		return EC_FINAL;
	for (int i = 0; i < st->nr_pending; i++)
		if (st->pending[i].v == v)
			return st->pending[i].complete ? EC_HOLDS : EC_LACKS;
	return EC_LACKS;
}

enum ec_verdict ec_resolve(int d, int n, const enum ec_holds *t)
{
	int holds = 0, answered = 0;
	bool lacks = false;

	for (int i = 0; i < n; i++) {
		if (t[i] == EC_FINAL)
			return EC_COMMIT;
		lacks |= t[i] == EC_LACKS;
		holds += t[i] == EC_HOLDS;
		answered += t[i] != EC_UNKNOWN;
	}
	if (answered * 2 <= n)
		return EC_WAIT;
	if (lacks)
		return EC_ABORT;
	return holds >= d ? EC_COMMIT : EC_WAIT;
}

uint64_t ec_newest_pending(const struct strip_state *st, int n,
			   const bool *answered)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++) {
		const struct strip_state *s = &st[i];

		if (answered[i] && s->nr_pending &&
		    s->pending[s->nr_pending - 1].v > v)
			v = s->pending[s->nr_pending - 1].v;
	}
	return v;
}
