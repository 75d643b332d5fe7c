/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Stall detection for client connections (client.c, nbd.c): a peer that
 * stops reading its replies holds their buffers, one that sends part of a
 * request and nothing more holds a connection.  The caller samples each
 * connection once a second; one that has not moved for
 * SD_CLIENT_STALL_MS is reported so that it can be disconnected.  A
 * connection idle between requests never stalls.
 */
#ifndef SHEEP_NET_STALL_H
#define SHEEP_NET_STALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "net/transport.h"

/*
 * A request must also arrive at SD_CLIENT_MIN_RATE bytes a second or more,
 * over windows of SD_CLIENT_RATE_WINDOW_MS: a payload trickled a byte at a
 * time keeps moving (no stall) while it holds its share of the budget.
 * 16 KiB/s is a slow link's rate; a 4 MiB write may take over 4 minutes.
 */
#define SD_CLIENT_MIN_RATE		(16 * 1024)
#define SD_CLIENT_RATE_WINDOW_MS	20000

/*
 * The caller samples every STALL_CHECK_MS; a sample later than
 * STALL_GAP_MS after the one before means the daemon itself did not run
 * (SIGSTOP, a paused VM, a stuck loop): that time is not the client's,
 * and the watch's clocks move past it.
 */
#define STALL_CHECK_MS		1000
#define STALL_GAP_MS		3000

struct stall_watch {
	uint64_t rx_progress_at, tx_progress_at;
	size_t rx_got, tx_backlog;
	uint64_t rate_since;	/* the rate's window began */
	size_t rate_got;	/* rx_got then */
	bool rate_on;		/* a request under way is being timed */
	uint64_t checked_at;	/* the last sample */
};

enum stall { STALL_NONE, STALL_TX, STALL_RX, STALL_SLOW };

void stall_watch_init(struct stall_watch *w, uint64_t now);
/*
 * @rx_begun: a request is under way (part of a header, a payload due);
 * @rx_got: its bytes received so far.  Replies are watched through the
 * transport's send backlog of @xc.
 */
enum stall stall_check(struct stall_watch *w, const struct xconn *xc,
		       bool rx_begun, size_t rx_got, uint64_t now);
/* what stall_check reported, for the log line ("a client ...") */
const char *stall_reason(enum stall s);

#endif
