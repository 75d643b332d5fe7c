// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/core.h"
#include "net/stall.h"
#include "util.h"

void stall_watch_init(struct stall_watch *w, uint64_t now)
{
	w->rx_progress_at = w->tx_progress_at = now;
	w->rx_got = w->tx_backlog = 0;
	w->rate_since = now;
	w->rate_got = 0;
	w->rate_on = false;
	w->checked_at = now;
}

/* time the daemon did not run since the last sample is nobody's */
static void skip_own_gap(struct stall_watch *w, uint64_t now)
{
	uint64_t gap = now > w->checked_at ? now - w->checked_at : 0;

	w->checked_at = now;
	if (gap <= STALL_GAP_MS)
		return;
	gap -= STALL_CHECK_MS;
	w->rx_progress_at = MIN(w->rx_progress_at + gap, now);
	w->tx_progress_at = MIN(w->tx_progress_at + gap, now);
	w->rate_since = MIN(w->rate_since + gap, now);
}

/* a request under way must come at SD_CLIENT_MIN_RATE or faster */
static bool too_slow(struct stall_watch *w, bool rx_begun, size_t rx_got,
		     uint64_t now)
{
	uint64_t span = now - w->rate_since;

	/*
	 * Between requests nothing is timed; a request is timed from what
	 * it had when first seen (a first burst buys no time, and half a
	 * header then nothing is a stall, STALL_RX, not a slow sender)
	 */
	if (!rx_begun || !w->rate_on || rx_got < w->rate_got) {
		w->rate_on = rx_begun;
		w->rate_since = now;
		w->rate_got = rx_got;
		return false;
	}
	if (span < SD_CLIENT_RATE_WINDOW_MS)
		return false;
	/* (no progress at all is a stall, STALL_RX, after its own time) */
	if (rx_got > w->rate_got && (uint64_t)(rx_got - w->rate_got) * 1000 <
	    (uint64_t)SD_CLIENT_MIN_RATE * span)
		return true;
	w->rate_since = now;
	w->rate_got = rx_got;
	return false;
}

enum stall stall_check(struct stall_watch *w, const struct xconn *xc,
		       bool rx_begun, size_t rx_got, uint64_t now)
{
	size_t backlog = xconn_send_backlog(xc);

	skip_own_gap(w, now);
	/* replies queued and not moving */
	if (!backlog || backlog < w->tx_backlog)
		w->tx_progress_at = now;
	w->tx_backlog = backlog;
	if (now - w->tx_progress_at >= SD_CLIENT_STALL_MS)
		return STALL_TX;
	/* a request begun and not moving */
	if (!rx_begun || rx_got != w->rx_got)
		w->rx_progress_at = now;
	w->rx_got = rx_got;
	if (now - w->rx_progress_at >= SD_CLIENT_STALL_MS)
		return STALL_RX;
	return too_slow(w, rx_begun, rx_got, now) ? STALL_SLOW : STALL_NONE;
}

const char *stall_reason(enum stall s)
{
	switch (s) {
	case STALL_TX:
		return "has not read its replies for 30 s";
	case STALL_SLOW:
		return "sent its request slower than 16 KiB/s for 20 s";
	default:
		return "sent part of a request and nothing more for 30 s";
	}
}
