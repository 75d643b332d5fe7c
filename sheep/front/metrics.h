/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Metrics (metrics.c) and the HTTP endpoint that serves them (http.c).
 *
 * Once a second the main loop copies what it knows (request counters and
 * latencies, budget, connections, cluster, recovery, store, checksums)
 * into a snapshot under a mutex; the HTTP thread formats the latest
 * snapshot.  Scraping never runs on the event loop nor waits for it.
 */
#ifndef SHEEP_FRONT_METRICS_H
#define SHEEP_FRONT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "internal_proto.h"
#include "net/rdma.h"
#include "core/request.h"
#include "recovery/scrub.h"
#include "front/s3_stats.h"

/* stored objects by kind (kelpie_objects) */
enum {
	OBJ_KIND_DATA, OBJ_KIND_INODE, OBJ_KIND_ATTR, OBJ_KIND_LEDGER,
	OBJ_KIND_NR
};

/* per-VDI series: the busiest VDIs only, so series stay bounded */
#define METRICS_TOP_VDIS	10

struct metrics_snap {
	uint64_t taken_at;		/* unix seconds, 0: none yet */
	uint64_t taken_mono;		/* now_msec() then */
	bool gateway;
	struct stat_metrics req;
	struct sd_stat st;
	uint64_t budget_used, budget_limit;
	uint64_t io_queue, io_queue_max;
	uint64_t loop_served, loop_writes;
	uint64_t reclaimed;		/* vdi/reclaim.c */
	uint64_t list_walks, list_served;	/* ops/obj_list.c */
	uint64_t clients, nbd_conns;
	uint32_t epoch;
	uint64_t epoch_since_ms;	/* unix ms: this node entered it */
	uint8_t status;
	bool joined;
	uint64_t nr_nodes;
	struct recovery_state rec;
	bool rec_halted;
	uint32_t rec_last_epoch;
	uint64_t rec_last_objects;
	bool throttle_adaptive;
	uint64_t throttle_waits, throttle_passed;
	bool store_ok;
	uint64_t store_size, store_free;
	bool objects_ok;		/* the store has been walked */
	uint64_t objects[OBJ_KIND_NR];
	uint64_t stale_objects, stale_bytes;
	bool journaled;
	uint64_t journal_checkpoints;
	uint64_t csum_mismatches;
	struct scrub_stat scrub;
	uint64_t vdis, vdi_locks;
	struct stat_vdi top[METRICS_TOP_VDIS];
	size_t nr_top;
	char store_dir[256];
	struct rdma_stats rdma;
	bool s3;			/* sheep --s3: s3_stats kept */
	struct s3_stats s3_stats;
};

/* metrics.c: snapshots from now on, once a second (http_init) */
void metrics_start(void);
/* the latest snapshot (main loop or any thread) */
void metrics_get(struct metrics_snap *m);
/* count the stored objects by kind: any thread but the main loop */
void metrics_count_objects(void);
/* a fresh snapshot formatted into @buf (main loop; GET_METRICS) */
int metrics_text(char *buf, size_t len);
/* the Prometheus text format of @m into @buf; bytes written, or -1 */
int metrics_format(const struct metrics_snap *m, char *buf, size_t len);
/* /health: true if the node serves I/O, else false and why in @why */
bool metrics_healthy(const struct metrics_snap *m, char *why, size_t len);

/* http.c: sheep --http [ADDR:]PORT */
int http_configure(const char *spec);
int http_init(const char *default_addr);

#endif
