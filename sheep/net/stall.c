// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/core.h"
#include "net/stall.h"

void stall_watch_init(struct stall_watch *w, uint64_t now)
{
	w->rx_progress_at = w->tx_progress_at = now;
	w->rx_got = w->tx_backlog = 0;
}

enum stall stall_check(struct stall_watch *w, const struct xconn *xc,
		       bool rx_begun, size_t rx_got, uint64_t now)
{
	size_t backlog = xconn_send_backlog(xc);

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
	return now - w->rx_progress_at >= SD_CLIENT_STALL_MS ? STALL_RX :
							       STALL_NONE;
}

const char *stall_reason(enum stall s)
{
	return s == STALL_TX ? "has not read its replies" :
	       "sent part of a request and nothing more";
}
