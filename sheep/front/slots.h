/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Connection slots: members' connections never wait for a flood's */
#ifndef SHEEP_FRONT_SLOTS_H
#define SHEEP_FRONT_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

/* slots kept beyond the public ones for members' addresses */
#define SLOTS_MEMBER_RESERVE	256
/*
 * descriptors left to the store (its fd cache keeps 512), the members'
 * slots, peers, listeners, the log and the rest of the daemon
 */
#define SLOTS_FD_HEADROOM	(512 + SLOTS_MEMBER_RESERVE + 128)
/* however low the descriptor limit, this many public slots */
#define SLOTS_MIN_PUBLIC	64
/* one address takes at most a quarter of the public slots */
#define SLOTS_PER_SOURCE(max)	((max) / 4 ? (max) / 4 : 1)

/* the public slots, from the process's descriptor limit */
void slots_init(uint64_t nofile);
/* what the client listeners may hold at most */
int slots_listener_max(void);
/* a connection from @addr (@member: a member's address or the unix
 * socket): false when it must be refused */
bool slots_take(const uint8_t addr[16], bool member);
void slots_put(const uint8_t addr[16], bool member);
/*
 * A connection of a port with a connection limit of its own (the NBD
 * export): it takes no slot, but its payloads count with its address's
 */
void slots_track(const uint8_t addr[16]);
void slots_untrack(const uint8_t addr[16]);

/*
 * Payloads still on their way, from the connections of one address on
 * every port: at most 1/SLOTS_INCOMPLETE_SHARE of the budget, so that
 * payloads trickled in slowly (until the rate rule of net/stall.h drops
 * them) hold little and never what the other addresses need.  The calls
 * are valid while a connection of @addr is open (taken or tracked).
 */
#define SLOTS_INCOMPLETE_SHARE	8
/* may a payload of @cost start arriving from @addr now? */
bool slots_incomplete_full(const uint8_t addr[16], uint64_t cost);
void slots_incomplete_add(const uint8_t addr[16], uint64_t cost);
/* also wakes the connections of every port that wait for room */
void slots_incomplete_sub(const uint8_t addr[16], uint64_t cost);

#endif
