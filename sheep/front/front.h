/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * front/: the connections sheep serves, the top of the request path.
 * client.c takes Sheepdog requests from dog, QEMU and other sheep;
 * nbd.c and nbd_vdi.c export VDIs over NBD (nbd.h); client_lock.c ties
 * KLOCK VDI locks to the client connection that took them.
 */
#ifndef SHEEP_FRONT_FRONT_H
#define SHEEP_FRONT_FRONT_H

#include <stdbool.h>
#include <stdint.h>
#include "core/request.h"

/* client.c */
int listen_init(const char *bindaddr, int port, const char *sock_path);
/* sheep-to-sheep connections over RDMA on @addr:@port (--rdma) */
int listen_rdma(const uint8_t addr[16], uint16_t port);
void listen_stop(void);
size_t client_count(void);

/* client_lock.c: KLOCK locks go with the client connection */
#define SD_MAX_CLIENT_LOCKS	64
void client_lock_release(uint32_t vid);
bool client_lock_wait_release(struct request *req);

#endif
