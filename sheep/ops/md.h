/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Multi-disk nodes: the MD_* opcodes and the disk watch (md.c). */
#ifndef SHEEP_OPS_MD_H
#define SHEEP_OPS_MD_H

#include "core/request.h"

/* MD_INFO (I/O worker): sd_md_info, protocol.md §9.7 */
int md_info_work(struct request *req);
/* MD_PLUG, MD_UNPLUG: main part, then the store's work in a worker */
int md_change(struct request *req);
int md_change_work(struct request *req);
/* unplug disks that fail, from now on (sheep BASE,DIR... only) */
void md_watch_start(void);
/*
 * A replica write that failed with EIO waits for the watch's next look
 * (md.c): true if parked, false if it cannot wait (no watch, too many)
 */
bool md_park_eio(struct request *req);

#endif
