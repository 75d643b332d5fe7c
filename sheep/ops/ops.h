/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ops/: the opcode table (ops.c) and the dispatcher (dispatch.c) that
 * runs every request, from a client or from the daemon, by its class.
 */
#ifndef SHEEP_OPS_OPS_H
#define SHEEP_OPS_OPS_H

#include <stddef.h>
#include <stdint.h>
#include "core/request.h"

/* the description of @opcode, or NULL for an unknown one */
const struct sd_op *get_sd_op(uint8_t opcode);
/* admit and run @req (req->op may be NULL: it is looked up) */
void queue_request(struct request *req);

/*
 * GET_METRICS, handed in by main from front/ (a higher layer): @count
 * runs in an I/O worker (it may walk the store), then @text on the main
 * loop writes the exposition text; bytes written, or -1 if @len is short
 */
struct ops_metrics_hooks {
	void (*count)(void);
	int (*text)(char *buf, size_t len);
};
void ops_set_metrics_hooks(const struct ops_metrics_hooks *hooks);

/*
 * obj_list.c: GET_OBJ_LIST's answer, from a walk of the store that began
 * at or after @since_ns (now_nsec() when the request arrived), shared by
 * every request that arrived before it began; BUFFER_SMALL if @len
 * cannot hold it.  Blocks: I/O workers.
 */
int obj_list_get(uint64_t since_ns, uint8_t *buf, uint32_t len,
		 uint32_t *out_len);
/* walks done, requests answered (metrics) */
void obj_list_stats(uint64_t *walks, uint64_t *served);

#endif
