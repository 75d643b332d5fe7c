/* SPDX-License-Identifier: GPL-2.0-or-later */
/* VID recycling (vdi/recycle.c, doc/vid-recycling.md). */
#ifndef SHEEP_VDI_RECYCLE_H
#define SHEEP_VDI_RECYCLE_H

#include <stdbool.h>
#include <stdint.h>
#include "core/request.h"

/* vids one RECYCLE_VDIS frees at most: a larger family stays */
#define RECYCLE_FAMILY_MAX	4096

/* start-up, before the local inodes are scanned */
void recycle_init(void);
/* with the cluster flag set */
bool recycling(void);
/*
 * Main thread, on the node that ran a DEL_VDI: if @vid's whole family
 * (root and every descendant) is deleted now, recycle it
 */
void recycle_after_delete(uint32_t vid);
/* main thread, once the whole cluster finished a recovery: every family */
void recycle_sweep(void);
/* RECYCLE_VDIS: the originator's work part and every node's main part */
int recycle_work(struct request *req);
int recycle_main(const struct sd_req *req, struct sd_rsp *rsp, void *data,
		 const struct cluster_ctx *ctx);
/* RECYCLE_BUSY (main thread) */
int recycle_busy(struct request *req);
/*
 * Cluster worker (NEW_VDI): the vid a new VDI takes (objects.md §6.4:
 * the lowest not in use), a free one only once every member removed its
 * old objects; its incarnation in @gen.  0 if none.
 */
uint32_t recycle_pick_vid(uint32_t *gen);
/* the inode of a new VDI (@gen from recycle_pick_vid) says its gen */
void recycle_stamp(struct sd_inode_header *h, uint32_t gen);
/* objects removed since start-up (objects of recycled families) */
uint64_t recycle_removed(void);

#endif
