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
 * The cost of the requests of @addr's connections whose payload is still
 * on its way (front/client.c); valid while one of them is open
 */
uint64_t *slots_incomplete(const uint8_t addr[16]);

#endif
