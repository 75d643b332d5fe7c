// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Metrics in the Prometheus text exposition format (version 0.0.4).  The
 * main loop takes a snapshot once a second (metrics_start); formatting
 * works on a copy of it, so a scrape costs the I/O path one memcpy a
 * second whether anyone scrapes or not.  Names follow Prometheus'
 * conventions: kelpie_ prefix, _total for counters, base units (_bytes,
 * _seconds).  Series are bounded: labels take values from fixed lists
 * (plus the store's path), never from request contents.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "metrics.h"
#include "front.h"
#include "nbd.h"
#include "front/s3.h"
#include "util.h"
#include "core/core.h"
#include "ops/ops.h"
#include "recovery/recovery.h"
#include "state/cluster.h"
#include "state/vdi.h"
#include "store/store.h"
#include "vdi/reclaim.h"

#define SNAP_INTERVAL_MS	1000

/* the store is walked for its object counts at most this often */
#define OBJECTS_EVERY_MS	1000

static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct metrics_snap snap;
static struct timer snap_timer;

/* the last walk's counts; a walk runs outside the lock */
static pthread_mutex_t objects_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint64_t at;		/* now_msec() of the last walk, 0: none */
	bool walking, ok;
	uint64_t n[OBJ_KIND_NR];
} objects;

static const char *const obj_kind_names[OBJ_KIND_NR] = {
	[OBJ_KIND_DATA] = "data", [OBJ_KIND_INODE] = "inode",
	[OBJ_KIND_ATTR] = "attr", [OBJ_KIND_LEDGER] = "ledger",
};

static const char *const class_names[SC_NR] = {
	[SC_CLIENT_READ] = "client_read", [SC_CLIENT_WRITE] = "client_write",
	[SC_CLIENT_REMOVE] = "client_remove",
	[SC_CLIENT_FLUSH] = "client_flush", [SC_PEER_READ] = "peer_read",
	[SC_PEER_WRITE] = "peer_write", [SC_PEER_REMOVE] = "peer_remove",
};

static const char *const result_names[SR_NR] = {
	[SR_OK] = "ok", [SR_NOT_FOUND] = "not_found",
	[SR_IO_ERROR] = "io_error", [SR_NO_SPACE] = "no_space",
	[SR_NETWORK] = "network_error", [SR_RETRY] = "retry",
	[SR_INVALID] = "invalid", [SR_OTHER] = "other",
};

/* ---- object counts, off the main loop ---- */

/* a strip counts as an object file of its own */
static int count_object(struct obj_key k, void *arg)
{
	uint64_t oid = k.oid;
	uint64_t *n = arg;

	if (is_vdi_obj(oid))
		n[OBJ_KIND_INODE]++;
	else if (is_vdi_attr_obj(oid))
		n[OBJ_KIND_ATTR]++;
	else if (is_ledger_obj(oid))
		n[OBJ_KIND_LEDGER]++;
	else
		n[OBJ_KIND_DATA]++;
	return 0;
}

void metrics_count_objects(void)
{
	uint64_t n[OBJ_KIND_NR] = { 0 };
	uint64_t now = now_msec();
	bool ok;

	if (sys.gateway)
		return;
	pthread_mutex_lock(&objects_lock);
	if (objects.walking ||
	    (objects.at && now < objects.at + OBJECTS_EVERY_MS)) {
		pthread_mutex_unlock(&objects_lock);
		return;
	}
	objects.walking = true;
	pthread_mutex_unlock(&objects_lock);
	ok = !store_for_each(count_object, n);
	pthread_mutex_lock(&objects_lock);
	memcpy(objects.n, n, sizeof(n));
	objects.ok = ok;
	objects.at = now_msec();
	objects.walking = false;
	pthread_mutex_unlock(&objects_lock);
}

static void copy_objects(struct metrics_snap *m)
{
	pthread_mutex_lock(&objects_lock);
	m->objects_ok = objects.at && objects.ok;
	memcpy(m->objects, objects.n, sizeof(m->objects));
	pthread_mutex_unlock(&objects_lock);
}

/* ---- the snapshot, on the main loop ---- */

static void count_vdi(uint32_t vid, struct vdi_info *vi, void *arg)
{
	struct metrics_snap *m = arg;

	(void)vid;
	if (vi->deleted || vi->recycled)
		return;
	m->vdis++;
	m->vdi_locks += vi->lock_state == LOCK_STATE_LOCKED;
}

static void take_snapshot(struct metrics_snap *m)
{
	memset(m, 0, sizeof(*m));
	m->taken_at = (uint64_t)time(NULL);
	m->taken_mono = now_msec();
	m->gateway = sys.gateway;
	stat_read_metrics(&m->req);
	stat_read(&m->st);
	budget_read(&m->budget_used, &m->budget_limit);
	m->io_queue = wq_pending(sys.io_wq);
	m->loop_served = request_loop_served(false);
	m->loop_writes = request_loop_served(true);
	m->reclaimed = vdi_reclaimed();
	obj_list_stats(&m->list_walks, &m->list_served);
	m->io_queue_max = SD_IO_QUEUE;
	m->clients = client_count();
	m->nbd_conns = nbd_conn_count();
	m->epoch = cstate->epoch;
	m->epoch_since_ms = cstate->epoch_since_ms;
	m->status = cstate->status;
	m->joined = cstate->joined;
	m->nr_nodes = cstate->nr_members;
	recovery_stat(&m->rec);
	m->rec_halted = recovery_halted();
	recovery_last(&m->rec_last_epoch, &m->rec_last_objects);
	m->throttle_adaptive = recovery_throttle_adaptive();
	recovery_throttle_counts(&m->throttle_waits, &m->throttle_passed);
	if (!sys.gateway) {
		m->store_ok = !store_stat(&m->store_size, &m->store_free);
		store_stale_usage(&m->stale_objects, &m->stale_bytes);
		m->csum_mismatches = store_nr_mismatches();
		snprintf(m->store_dir, sizeof(m->store_dir), "%s",
			 store_dir());
		copy_objects(m);
		m->journaled = store_journaled();
		m->journal_checkpoints = journal_checkpoints();
	}
	scrub_get_stat(&m->scrub);
	vdi_for_each(count_vdi, m);
	m->nr_top = stat_top_vdis(m->top, METRICS_TOP_VDIS);
	rdma_get_stats(&m->rdma);
	m->s3 = s3_enabled();
	if (m->s3)
		s3_stats_read(&m->s3_stats);
}

static void snap_tick(struct timer *t)
{
	struct metrics_snap m;

	take_snapshot(&m);
	pthread_mutex_lock(&snap_lock);
	snap = m;
	pthread_mutex_unlock(&snap_lock);
	timer_add(sys.loop, t, SNAP_INTERVAL_MS);
}

void metrics_start(void)
{
	snap_timer.fn = snap_tick;
	snap_tick(&snap_timer);
}

/*
 * GET_METRICS, on the main loop: a fresh snapshot at most once per
 * SNAP_INTERVAL_MS (it walks the VDI table), so that a client asking in
 * a loop cannot make the loop do that walk every time
 */
int metrics_text(char *buf, size_t len)
{
	static struct metrics_snap m;
	static uint64_t at;
	uint64_t now = now_msec();

	if (!at || now >= at + SNAP_INTERVAL_MS) {
		take_snapshot(&m);
		at = now;
	} else if (!sys.gateway) {
		copy_objects(&m);
	}
	return metrics_format(&m, buf, len);
}

/*
 * The snapshot is up to a second old; the object counts are read fresh
 * so that a walk the caller has just made shows (the snapshot may predate
 * the first walk, and then /metrics lacked kelpie_objects).
 */
void metrics_get(struct metrics_snap *m)
{
	pthread_mutex_lock(&snap_lock);
	*m = snap;
	pthread_mutex_unlock(&snap_lock);
	if (!sys.gateway)
		copy_objects(m);
}

/* ---- the text format ---- */

struct out {
	char *buf;
	size_t len, pos;
	bool full;
};

__attribute__((format(printf, 2, 3)))
static void emit(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->pos, o->len - o->pos, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->pos) {
		o->full = true;
		return;
	}
	o->pos += (size_t)n;
}

static void family(struct out *o, const char *name, const char *type,
		   const char *help)
{
	emit(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge(struct out *o, const char *name, const char *help,
		  uint64_t v)
{
	family(o, name, "gauge", help);
	emit(o, "%s %llu\n", name, (unsigned long long)v);
}

static void counter(struct out *o, const char *name, const char *help,
		    uint64_t v)
{
	family(o, name, "counter", help);
	emit(o, "%s %llu\n", name, (unsigned long long)v);
}

/* one sample with one label */
static void sample(struct out *o, const char *name, const char *label,
		   const char *value, uint64_t v)
{
	emit(o, "%s{%s=\"%s\"} %llu\n", name, label, value,
	     (unsigned long long)v);
}

/* a label value: backslash, double quote and newline escaped */
static void escape_label(const char *in, char *out, size_t len)
{
	size_t k = 0;

	for (; *in && k + 2 < len; in++) {
		if (*in == '\\' || *in == '"') {
			out[k++] = '\\';
			out[k++] = *in;
		} else if (*in == '\n') {
			out[k++] = '\\';
			out[k++] = 'n';
		} else {
			out[k++] = *in;
		}
	}
	out[k] = 0;
}

static void format_requests(struct out *o, const struct stat_metrics *r)
{
	family(o, "kelpie_requests_total", "counter",
	       "Requests served, by class and result.");
	for (int c = 0; c < SC_NR; c++)
		for (int k = 0; k < SR_NR; k++)
			emit(o, "kelpie_requests_total{class=\"%s\","
			     "result=\"%s\"} %llu\n", class_names[c],
			     result_names[k],
			     (unsigned long long)r->cls[c].results[k]);
	family(o, "kelpie_request_duration_seconds", "histogram",
	       "Time from dispatch to response, by class of request.");
	for (int c = 0; c < SC_NR; c++) {
		const struct stat_class_metrics *m = &r->cls[c];
		uint64_t cum = 0;

		for (int b = 0; b < STAT_NR_BUCKETS; b++) {
			cum += m->buckets[b];
			emit(o, "kelpie_request_duration_seconds_bucket{"
			     "class=\"%s\",le=\"%g\"} %llu\n", class_names[c],
			     (double)stat_bucket_ns[b] / 1e9,
			     (unsigned long long)cum);
		}
		cum += m->buckets[STAT_NR_BUCKETS];
		emit(o, "kelpie_request_duration_seconds_bucket{class=\"%s\","
		     "le=\"+Inf\"} %llu\n", class_names[c],
		     (unsigned long long)cum);
		emit(o, "kelpie_request_duration_seconds_sum{class=\"%s\"} "
		     "%.9f\n", class_names[c], (double)m->sum_ns / 1e9);
		emit(o, "kelpie_request_duration_seconds_count{class=\"%s\"} "
		     "%llu\n", class_names[c], (unsigned long long)cum);
	}
}

static uint64_t results_of(const struct stat_metrics *r, int kind)
{
	uint64_t n = 0;

	for (int c = 0; c < SC_NR; c++)
		n += r->cls[c].results[kind];
	return n;
}

static void format_traffic(struct out *o, const struct metrics_snap *m)
{
	family(o, "kelpie_requests_in_flight", "gauge",
	       "Requests being served, from clients and from other sheep.");
	sample(o, "kelpie_requests_in_flight", "side", "client",
	       m->st.gway_active);
	sample(o, "kelpie_requests_in_flight", "side", "peer",
	       m->st.peer_active);
	family(o, "kelpie_received_bytes_total", "counter",
	       "Payload bytes of writes received.");
	sample(o, "kelpie_received_bytes_total", "side", "client",
	       m->st.gway_bytes_in);
	sample(o, "kelpie_received_bytes_total", "side", "peer",
	       m->st.peer_bytes_in);
	family(o, "kelpie_sent_bytes_total", "counter",
	       "Payload bytes asked for by reads.");
	sample(o, "kelpie_sent_bytes_total", "side", "client",
	       m->st.gway_bytes_out);
	sample(o, "kelpie_sent_bytes_total", "side", "peer",
	       m->st.peer_bytes_out);
	family(o, "kelpie_errors_total", "counter",
	       "Errors by kind: requests answered with them, and checksum "
	       "mismatches found by the store.");
	sample(o, "kelpie_errors_total", "kind", "network",
	       results_of(&m->req, SR_NETWORK));
	sample(o, "kelpie_errors_total", "kind", "disk_io",
	       results_of(&m->req, SR_IO_ERROR));
	sample(o, "kelpie_errors_total", "kind", "no_space",
	       results_of(&m->req, SR_NO_SPACE));
	sample(o, "kelpie_errors_total", "kind", "checksum",
	       m->csum_mismatches);
	gauge(o, "kelpie_budget_used_bytes",
	      "Payload bytes held by requests in flight.", m->budget_used);
	gauge(o, "kelpie_budget_limit_bytes",
	      "The payload budget (sheep --budget).", m->budget_limit);
	gauge(o, "kelpie_io_queue_depth",
	      "Store operations queued or running in the I/O pool.",
	      m->io_queue);
	gauge(o, "kelpie_io_queue_capacity",
	      "Store operations the I/O pool queues at most.",
	      m->io_queue_max);
	counter(o, "kelpie_reads_on_loop_total",
		"Object reads (from other sheep or this node's gateway) "
		"served on the event loop from the page cache, without the "
		"I/O pool.", m->loop_served);
	counter(o, "kelpie_writes_on_loop_total",
		"Cached object writes (from other sheep or this node's "
		"gateway) stored on the event loop, without the I/O pool, "
		"where the file system takes them without blocking (XFS).",
		m->loop_writes);
	counter(o, "kelpie_objects_reclaimed_total",
		"Copies of data objects and ledgers of deleted VDIs this "
		"node removed after the deletion itself (left by a power loss "
		"or by a node down during the delete).", m->reclaimed);
	counter(o, "kelpie_object_list_requests_total",
		"Object lists other members asked this node for (each "
		"recovery asks every member).", m->list_served);
	counter(o, "kelpie_object_list_walks_total",
		"Walks of the store that answered them: the requests of a "
		"burst share one.", m->list_walks);
	gauge(o, "kelpie_client_connections",
	      "Connections on the Sheepdog port (dog, QEMU, other sheep).",
	      m->clients);
	gauge(o, "kelpie_nbd_connections", "Connections on the NBD port.",
	      m->nbd_conns);
	family(o, "kelpie_rdma_payload_bytes_total", "counter",
	       "Bytes sent to other sheep over RDMA by copying them into "
	       "messages or by describing buffers the peer reads itself, "
	       "and bytes read from peers' buffers (of which bounced: "
	       "through a bounce buffer, the receive not registered).");
	sample(o, "kelpie_rdma_payload_bytes_total", "how", "copied",
	       m->rdma.copied);
	sample(o, "kelpie_rdma_payload_bytes_total", "how", "described",
	       m->rdma.described);
	sample(o, "kelpie_rdma_payload_bytes_total", "how", "read",
	       m->rdma.read);
	sample(o, "kelpie_rdma_payload_bytes_total", "how", "bounced",
	       m->rdma.bounced);
}

static const char *status_name(uint8_t status)
{
	switch (status) {
	case SD_STATUS_OK:
		return "ok";
	case SD_STATUS_SHUTDOWN:
		return "shutdown";
	case SD_STATUS_KILLED:
		return "killed";
	default:
		return "waiting";
	}
}

static void format_cluster(struct out *o, const struct metrics_snap *m)
{
	static const char *const statuses[] = {
		"ok", "waiting", "shutdown", "killed",
	};

	gauge(o, "kelpie_cluster_epoch", "The current epoch.", m->epoch);
	/* the spread of this over the members is how long they took to agree */
	family(o, "kelpie_cluster_epoch_timestamp_seconds", "gauge",
	       "When this node entered the current epoch (unix time).");
	emit(o, "kelpie_cluster_epoch_timestamp_seconds %llu.%03llu\n",
	     (unsigned long long)(m->epoch_since_ms / 1000),
	     (unsigned long long)(m->epoch_since_ms % 1000));
	gauge(o, "kelpie_cluster_nodes", "Members of the cluster.",
	      m->nr_nodes);
	family(o, "kelpie_cluster_status", "gauge",
	       "1 for the cluster's status as this node sees it.");
	for (size_t i = 0; i < ARRAY_SIZE(statuses); i++)
		emit(o, "kelpie_cluster_status{status=\"%s\"} %d\n",
		     statuses[i], !strcmp(statuses[i], status_name(m->status)));
	gauge(o, "kelpie_node_joined", "1 if this node is a member.",
	      m->joined);
	gauge(o, "kelpie_recovery_running", "1 while this node recovers.",
	      m->rec.in_recovery);
	gauge(o, "kelpie_recovery_halted",
	      "1 if recovery stopped on an error (a full disk).",
	      m->rec_halted);
	gauge(o, "kelpie_recovery_objects",
	      "Objects the running recovery checks, else the last one did.",
	      m->rec.in_recovery ? m->rec.nr_total : m->rec_last_objects);
	gauge(o, "kelpie_recovery_objects_done",
	      "Objects the running recovery has checked, else the last one.",
	      m->rec.in_recovery ? m->rec.nr_finished : m->rec_last_objects);
	gauge(o, "kelpie_recovery_last_epoch",
	      "Epoch of the last recovery that finished on this node.",
	      m->rec_last_epoch);
	gauge(o, "kelpie_recovery_throttle_adaptive",
	      "1 if the recovery throttle holds only while clients do I/O "
	      "here (sheep -R ...,adaptive).", m->throttle_adaptive);
	counter(o, "kelpie_recovery_throttle_waits_total",
		"Times recovery stopped for the throttle.",
		m->throttle_waits);
	counter(o, "kelpie_recovery_throttle_passed_total",
		"Objects the adaptive throttle let past its limit, as no "
		"client did I/O here within the interval.",
		m->throttle_passed);
	gauge(o, "kelpie_vdis", "VDIs this node knows, snapshots included.",
	      m->vdis);
	gauge(o, "kelpie_vdi_locks", "VDIs locked by a client.",
	      m->vdi_locks);
}

static void format_store(struct out *o, const struct metrics_snap *m)
{
	char path[2 * sizeof(m->store_dir)];

	if (m->gateway)
		return;
	escape_label(m->store_dir, path, sizeof(path));
	if (m->store_ok) {
		family(o, "kelpie_store_size_bytes", "gauge",
		       "Size of the file system under a store directory.");
		sample(o, "kelpie_store_size_bytes", "path", path,
		       m->store_size);
		family(o, "kelpie_store_free_bytes", "gauge",
		       "Bytes free for the store in its file system.");
		sample(o, "kelpie_store_free_bytes", "path", path,
		       m->store_free);
		family(o, "kelpie_store_used_bytes", "gauge",
		       "Bytes used in the store's file system.");
		sample(o, "kelpie_store_used_bytes", "path", path,
		       m->store_size - m->store_free);
	}
	if (m->objects_ok) {
		family(o, "kelpie_objects", "gauge",
		       "Objects stored on this node, by kind (a walk of the "
		       "store at most once a second).");
		for (int k = 0; k < OBJ_KIND_NR; k++)
			emit(o, "kelpie_objects{path=\"%s\",kind=\"%s\"} "
			     "%llu\n", path, obj_kind_names[k],
			     (unsigned long long)m->objects[k]);
	}
	if (m->journaled)
		counter(o, "kelpie_journal_checkpoints_total",
			"Checkpoints of the write journal (sheep -j): each "
			"synced the objects written since the last.",
			m->journal_checkpoints);
	gauge(o, "kelpie_stale_objects",
	      "Old copies kept until recovery no longer needs them.",
	      m->stale_objects);
	gauge(o, "kelpie_stale_bytes", "Bytes of those old copies.",
	      m->stale_bytes);
	counter(o, "kelpie_checksum_detected_total",
		"Checksum mismatches that reads found since start-up.",
		m->scrub.detected);
	family(o, "kelpie_heals_total", "counter",
	       "Objects repaired, or not, after a read found them damaged.");
	sample(o, "kelpie_heals_total", "result", "repaired", m->scrub.healed);
	sample(o, "kelpie_heals_total", "result", "failed", m->scrub.unhealed);
	gauge(o, "kelpie_scrub_running", "1 while a scrub runs.",
	      m->scrub.running);
	family(o, "kelpie_scrub_objects", "gauge",
	       "Objects of the current or last scrub, by state.");
	sample(o, "kelpie_scrub_objects", "state", "listed", m->scrub.total);
	sample(o, "kelpie_scrub_objects", "state", "scanned", m->scrub.scanned);
	sample(o, "kelpie_scrub_objects", "state", "damaged", m->scrub.damaged);
	sample(o, "kelpie_scrub_objects", "state", "repaired",
	       m->scrub.repaired);
	sample(o, "kelpie_scrub_objects", "state", "unrepaired",
	       m->scrub.unrepaired);
	sample(o, "kelpie_scrub_objects", "state", "diverged",
	       m->scrub.diverged);
	sample(o, "kelpie_scrub_objects", "state", "reconciled",
	       m->scrub.reconciled);
}

static void vdi_sample(struct out *o, const char *name,
		       const struct stat_vdi *v, const char *op, uint64_t n)
{
	if (v->vid)
		emit(o, "%s{vid=\"%" PRIx32 "\",op=\"%s\"} %llu\n", name,
		     v->vid, op, (unsigned long long)n);
	else
		emit(o, "%s{vid=\"other\",op=\"%s\"} %llu\n", name, op,
		     (unsigned long long)n);
}

static void format_vdis(struct out *o, const struct metrics_snap *m)
{
	family(o, "kelpie_vdi_operations_total", "counter",
	       "Client reads and writes of data objects through this node, "
	       "for the busiest VDIs (vid in hex; other: VDIs beyond the "
	       "table).");
	for (size_t i = 0; i < m->nr_top; i++) {
		vdi_sample(o, "kelpie_vdi_operations_total", &m->top[i],
			   "read", m->top[i].reads);
		vdi_sample(o, "kelpie_vdi_operations_total", &m->top[i],
			   "write", m->top[i].writes);
	}
	family(o, "kelpie_vdi_bytes_total", "counter",
	       "Bytes of those reads and writes.");
	for (size_t i = 0; i < m->nr_top; i++) {
		vdi_sample(o, "kelpie_vdi_bytes_total", &m->top[i], "read",
			   m->top[i].read_bytes);
		vdi_sample(o, "kelpie_vdi_bytes_total", &m->top[i], "write",
			   m->top[i].write_bytes);
	}
}

/* series of the operations and results there were only: bounded */
static void format_s3(struct out *o, const struct s3_stats *s)
{
	family(o, "kelpie_s3_requests_total", "counter",
	       "S3 and Swift requests answered, by operation and HTTP status "
	       "(relayed: to the bucket's owner; none: the client went "
	       "first).");
	for (int op = 0; op < S3_OP_NR; op++)
		for (int r = 0; r < S3_RES_NR; r++)
			if (s->results[op][r])
				emit(o, "kelpie_s3_requests_total{op=\"%s\","
				     "code=\"%s\"} %llu\n", s3_op_names[op],
				     s3_res_names[r],
				     (unsigned long long)s->results[op][r]);
	family(o, "kelpie_s3_request_duration_seconds", "histogram",
	       "Time from a request's head read to its answer's end, by "
	       "operation.");
	for (int op = 0; op < S3_OP_NR; op++) {
		uint64_t cum = 0;

		for (int b = 0; b <= S3_STATS_BUCKETS; b++)
			cum += s->buckets[op][b];
		if (!cum)
			continue;
		cum = 0;
		for (int b = 0; b < S3_STATS_BUCKETS; b++) {
			cum += s->buckets[op][b];
			emit(o, "kelpie_s3_request_duration_seconds_bucket{"
			     "op=\"%s\",le=\"%g\"} %llu\n", s3_op_names[op],
			     (double)s3_stats_bucket_ns[b] / 1e9,
			     (unsigned long long)cum);
		}
		cum += s->buckets[op][S3_STATS_BUCKETS];
		emit(o, "kelpie_s3_request_duration_seconds_bucket{op=\"%s\","
		     "le=\"+Inf\"} %llu\n", s3_op_names[op],
		     (unsigned long long)cum);
		emit(o, "kelpie_s3_request_duration_seconds_sum{op=\"%s\"} "
		     "%.9f\n", s3_op_names[op], (double)s->sum_ns[op] / 1e9);
		emit(o, "kelpie_s3_request_duration_seconds_count{op=\"%s\"} "
		     "%llu\n", s3_op_names[op], (unsigned long long)cum);
	}
}

int metrics_format(const struct metrics_snap *m, char *buf, size_t len)
{
	struct out o = { .buf = buf, .len = len };

	family(&o, "kelpie_build_info", "gauge",
	       "Always 1; the version is a label.");
	emit(&o, "kelpie_build_info{version=\"%s\"} 1\n", KELPIE_VERSION);
	gauge(&o, "kelpie_metrics_snapshot_timestamp_seconds",
	      "When these values were taken (unix time).", m->taken_at);
	format_requests(&o, &m->req);
	format_traffic(&o, m);
	format_cluster(&o, m);
	format_store(&o, m);
	format_vdis(&o, m);
	if (m->s3)
		format_s3(&o, &m->s3_stats);
	return o.full ? -1 : (int)o.pos;
}

/* a snapshot older than this means the main loop is stuck */
#define SNAP_STALE_SEC	10

bool metrics_healthy(const struct metrics_snap *m, char *why, size_t len)
{
	/* the monotonic clock: a wall-clock step is no stuck loop */
	uint64_t now = now_msec();

	if (!m->taken_at || now > m->taken_mono + SNAP_STALE_SEC * 1000)
		snprintf(why, len, "the main loop has not answered for %llu s",
			 (unsigned long long)(now - m->taken_mono) / 1000);
	else if (!m->status)
		snprintf(why, len, "starting");
	else if (m->status == SD_STATUS_WAIT)
		snprintf(why, len, "cluster status: waiting (%s)",
			 m->epoch ? "for nodes to join" : "for format");
	else if (m->status != SD_STATUS_OK)
		snprintf(why, len, "cluster status: %s",
			 status_name(m->status));
	else if (!m->joined)
		snprintf(why, len, "this node is not a member");
	else
		return true;
	return false;
}
