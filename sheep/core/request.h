/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A request, from the network or issued by the daemon itself, and the
 * opcode descriptions the dispatcher (ops/) runs it by.  request.c owns
 * the life cycle: allocation against the payload budget, the hand-off of
 * store work to the I/O pool, and completion through req->complete.
 */
#ifndef SHEEP_CORE_REQUEST_H
#define SHEEP_CORE_REQUEST_H

#include <stdbool.h>
#include <stdint.h>
#include "internal_proto.h"
#include "list.h"
#include "work.h"
#include "core/core.h"
#include "store/store.h"

/* a main_fn that will complete the request later */
#define SD_RES_ASYNC		0x10000

struct request;

enum op_type { OP_GATEWAY, OP_PEER, OP_LOCAL, OP_CLUSTER };

/* what a cluster op's main part knows besides the request */
struct cluster_ctx {
	const struct sd_node *sender;
	bool originator;
	uint32_t aux;		/* a value the work part passed along */
};

struct sd_op {
	const char *name;
	enum op_type type;
	bool force;		/* served while the cluster is not running */
	uint16_t checks;	/* what ops/validate.c checks: OPV_* */
	uint32_t max_len;	/* bound of data_length; 0: SD_MAX_PAYLOAD */
	/* local op on the main thread */
	int (*main_fn)(struct request *req);
	/* peer / local op on an I/O worker, or cluster work part */
	int (*work_fn)(struct request *req);
	/*
	 * work_fn's work on the main thread, tried first when it can be
	 * done there without blocking (a read the page cache holds): true
	 * when done (rp.result set), false to queue work_fn
	 */
	bool (*try_fn)(struct request *req);
	/* cluster op main part, on every node in total order */
	int (*cluster_fn)(const struct sd_req *req, struct sd_rsp *rsp,
			  void *data, const struct cluster_ctx *ctx);
};

struct request {
	struct sd_req rq;
	struct sd_rsp rp;
	void *data;
	uint32_t data_len;		/* bytes allocated at data */
	const struct sd_op *op;
	struct list_head list;
	struct work work;
	uint32_t obj_size;		/* store ops: size of a new object */
	uint32_t cseq;			/* cluster ops: our message number */
	uint32_t aux;			/* cluster ops: work part -> main part */
	bool internal;			/* issued by the daemon itself */
	/* completed since its last dispatch: a second completion is a bug */
	bool completed;
	bool flat_index;		/* an index write that is a flat
					 * entry (DISCARD_OBJ): refused on
					 * a hyper volume */
	bool slot_held;			/* holds its object's write slot */
	bool ledger_afresh;		/* DECREF_PEER: recovery brings no
					 * ledger, start one here */
	bool conv_layout;		/* in the other layout of its VDI's
					 * conversion (gw/convert.c) */
	struct list_head slot_list;	/* in its object's slot (gateway) */
	uint32_t asked_rec;		/* the recovery that looked for its
					 * object (its gen), 0: none */
	uint8_t stat_active;		/* counted active: 1 gateway, 2 peer */
	uint64_t stat_start_ns;		/* when it was counted (monotonic) */
	/* gateway fan-out */
	int nr_pending;
	int nr_retries;
	uint32_t gw_result;
	struct timer retry_timer;
	/*
	 * a durable write the journal finishes later (work_fn returned
	 * STORE_PENDING): the end of the work and the sync's report, on
	 * the loop in either order; the second finishes the request
	 */
	struct store_wait swait;
	struct loop_call swait_call;
	int swait_res;
	uint8_t swait_parts;
	/* store work done: NULL to finish the request (request_done) */
	void (*io_done)(struct request *req);
	/* called on the main thread when the response is final */
	void (*complete)(struct request *req);
	void *caller;			/* owned by the submitter */
	uint64_t caller_bytes;		/* what the submitter counts for it */
	void *priv;			/* owned by the executing module */
};

/* a request with a zeroed payload buffer of @data_len bytes */
struct request *alloc_request(uint32_t data_len);
/*
 * The same, but the buffer is not zeroed: the socket or the handler fills
 * it (zeroing megabytes per request cost more than the I/O itself).
 */
struct request *alloc_payload_request(uint32_t data_len);
void free_request(struct request *req);
/* the response is final: count it and call req->complete */
void request_done(struct request *req);
/*
 * run op->work_fn on the I/O pool, back-pressured when the pool is full,
 * unless op->try_fn does the work at once on the main thread
 */
void submit_io(struct request *req);

/*
 * Run a request through the dispatcher (ops/queue_request), which fills
 * req->op when it is NULL.  For layers below ops/; ops/ hands its
 * dispatcher over at start-up.
 */
void request_submit(struct request *req);
void request_set_dispatch(void (*dispatch)(struct request *req));

/*
 * The budget of payload bytes held by requests (sheep --budget, default
 * SD_DEFAULT_BUDGET_MB): client traffic may use three quarters, the rest
 * is kept for sheep-to-sheep ops; one connection may hold a quarter.
 */
void budget_set_limit(uint64_t bytes);
uint64_t budget_conn_share(void);
void budget_charge(uint64_t bytes);
void budget_release(uint64_t bytes);
/*
 * Would @bytes more pass the budget?  Client traffic leaves a quarter to
 * replication and recovery between sheep (@peer).  An idle daemon takes
 * anything.
 */
bool budget_over(uint64_t bytes, bool peer);
/* @fn runs on the loop after budget was released, to resume readers */
void budget_add_release_hook(void (*fn)(void));

/*
 * requests served on the loop by op->try_fn, without an I/O worker: those
 * that carry data (@writes) or the others
 */
uint64_t request_loop_served(bool writes);

/* stats.c: the counters of dog node stat */
void stat_request_start(struct request *req);
void stat_request_end(struct request *req);
void stat_read(struct sd_stat *st);
/*
 * When the last object request of a client or of another node's gateway
 * (not recovery's, not scrub's) started here: now_nsec() time, 0 if none
 */
uint64_t stat_last_client_io_ns(void);

/* stats.c: per class of request, results by kind and latencies */
enum stat_class {
	SC_CLIENT_READ, SC_CLIENT_WRITE, SC_CLIENT_REMOVE, SC_CLIENT_FLUSH,
	SC_PEER_READ, SC_PEER_WRITE, SC_PEER_REMOVE, SC_NR
};
enum stat_result {
	SR_OK, SR_NOT_FOUND, SR_IO_ERROR, SR_NO_SPACE, SR_NETWORK, SR_RETRY,
	SR_INVALID, SR_OTHER, SR_NR
};
#define STAT_NR_BUCKETS	18
extern const uint64_t stat_bucket_ns[STAT_NR_BUCKETS];

struct stat_class_metrics {
	uint64_t results[SR_NR];
	/* not cumulative; the last one counts those above every bound */
	uint64_t buckets[STAT_NR_BUCKETS + 1];
	uint64_t sum_ns;
};

struct stat_metrics {
	struct stat_class_metrics cls[SC_NR];
};

void stat_read_metrics(struct stat_metrics *m);

/* client reads and writes of one VDI's data objects (vid 0: the rest) */
struct stat_vdi {
	uint32_t vid;
	uint64_t reads, writes, read_bytes, write_bytes;
};
size_t stat_top_vdis(struct stat_vdi *top, size_t n);
/* payload bytes held by requests, and the limit */
void budget_read(uint64_t *used, uint64_t *limit);

#endif
