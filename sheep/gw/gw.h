/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gw/: the gateway (a client's object request becomes peer requests to
 * the object's targets), the group commit of FLUSH_PEER, and the index
 * updates that keep data object references (objects.md §9).
 */
#ifndef SHEEP_GW_GW_H
#define SHEEP_GW_GW_H

#include <stdbool.h>
#include <stdint.h>
#include "core/request.h"

/* gateway.c */
void gateway_submit(struct request *req);
void gateway_flush(struct request *req);
/* the epoch changed (its view published): retries waiting go now */
void gateway_epoch_changed(void);
/* inode index writes from clients go to @fn instead (refcount.c) */
void gateway_set_index_update(void (*fn)(struct request *req));
/*
 * Hold every write of @oid that this gateway starts from now on, once the
 * running ones have finished: SD_RES_SUCCESS (held now), SD_RES_ASYNC
 * (@ready is called with the result later: SUCCESS, or AGAIN if not held
 * within @lease_ms) or SD_RES_AGAIN (fenced already, or too many fences).
 * The fence is lifted by gateway_unfence() or after @lease_ms.
 */
int gateway_fence(uint64_t oid, uint32_t lease_ms,
		  void (*ready)(void *arg, int res), void *arg);
/* SD_RES_SUCCESS, NO_OBJ if no such fence (the lease ran out) */
int gateway_unfence(uint64_t oid);
/* blocking gateway I/O for worker threads (never the main thread) */
int gw_exec_req(const struct sd_req *rq, void *buf);
int gw_exec_sync(uint8_t opcode, uint64_t oid, void *buf, uint32_t len,
		 uint32_t offset, uint8_t copies, uint16_t flags);

/* convert.c: CONVERT_OBJ, one object of dog vdi alter-copy's conversion */
void gw_convert(struct request *req);

/* flush.c: FLUSH_PEER as a group commit */
void flush_init(void);
void flush_submit(struct request *req);

/* refcount.c: index updates and generational references (objects.md §9) */
void refcount_init(void);
/*
 * A ledger's counters; the rest of the object is the identities of the
 * last drops it applied, whose order may differ between copies that
 * count the same (drops from two gateways arriving in either order)
 */
#define LEDGER_COUNTERS_SIZE	(SD_LEDGER_OBJ_SIZE - 520)

/*
 * DECREF_PEER on this replica: @op_id (0: none) makes a drop sent again
 * a no-op; with an id, a ledger not held here is SD_RES_NO_OBJ unless
 * @absent_ok (nothing will recover it: start afresh)
 */
int ledger_decref(uint64_t oid, uint32_t generation, uint32_t count,
		  uint64_t op_id, bool absent_ok, bool sync);

#endif
