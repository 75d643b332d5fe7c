// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog node stat -m: the counters that `sheep --http` serves at /metrics,
 * asked for with GET_METRICS (any sheep answers, --http or not).  The
 * plain form is for people: requests and latency percentiles by class,
 * errors, budget and queues, cluster, recovery, store, checksums and the
 * busiest VDIs.  -r prints the samples as the sheep sent them, without
 * the HELP/TYPE comments, one "name{labels} value" per line.
 *
 * The text comes from the network: it is parsed with explicit bounds,
 * a sample that does not parse is skipped, and label values are printed
 * with control characters replaced.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dog.h"
#include "net.h"
#include "node_metrics.h"
#include "proto.h"
#include "util.h"

struct sample {
	const char *name;	/* up to '{' or ' ' */
	const char *labels;	/* between the braces, "" if none */
	double value;
};

struct samples {
	struct sample *s;
	size_t n;
};

static const char *const classes[] = {
	"client_read", "client_write", "client_remove", "client_flush",
	"peer_read", "peer_write", "peer_remove",
};

static const char *const results[] = {
	"ok", "not_found", "io_error", "no_space", "network_error", "retry",
	"invalid", "other",
};

/* split one line (NUL-terminated, no newline) into @s; -1 if malformed */
static int parse_line(char *line, struct sample *s)
{
	char *sp, *end, *brace;

	if (!*line || *line == '#')
		return -1;
	sp = strrchr(line, ' ');
	if (!sp || sp == line)
		return -1;
	*sp = 0;
	s->value = strtod(sp + 1, &end);
	if (end == sp + 1 || *end)
		return -1;
	s->name = line;
	s->labels = "";
	brace = strchr(line, '{');
	if (brace) {
		size_t len = strlen(brace);

		if (len < 2 || brace[len - 1] != '}')
			return -1;
		brace[len - 1] = 0;
		*brace = 0;
		s->labels = brace + 1;
	}
	return 0;
}

/* the samples of @text (which is modified in place) */
static int parse_samples(char *text, struct samples *out)
{
	size_t lines = 1;
	char *p, *next;

	for (p = text; *p; p++)
		lines += *p == '\n';
	out->s = calloc(lines, sizeof(*out->s));
	out->n = 0;
	if (!out->s)
		return -1;
	for (p = text; p; p = next) {
		next = strchr(p, '\n');
		if (next)
			*next++ = 0;
		if (!parse_line(p, &out->s[out->n]))
			out->n++;
	}
	return 0;
}

/* the value of NAME{LABELS}, or NAN */
static double val(const struct samples *ss, const char *name,
		  const char *labels)
{
	for (size_t i = 0; i < ss->n; i++)
		if (!strcmp(ss->s[i].name, name) &&
		    !strcmp(ss->s[i].labels, labels))
			return ss->s[i].value;
	return NAN;
}

static uint64_t u(double v)
{
	return isnan(v) || v < 0 ? 0 : v > 1.8e19 ? UINT64_MAX : (uint64_t)v;
}

static double lval(const struct samples *ss, const char *name,
		   const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static double lval(const struct samples *ss, const char *name,
		   const char *fmt, ...)
{
	char labels[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(labels, sizeof(labels), fmt, ap);
	va_end(ap);
	return val(ss, name, labels);
}

/* the value of label @key in @labels into @buf ("" if absent) */
static void label_value(const char *labels, const char *key, char *buf,
			size_t len)
{
	size_t klen = strlen(key), k = 0;
	const char *p = labels;

	buf[0] = 0;
	while (p && *p) {
		if (!strncmp(p, key, klen) && p[klen] == '=' &&
		    p[klen + 1] == '"')
			break;
		p = strstr(p, "\",");
		if (p)
			p += 2;
	}
	if (!p || !*p)
		return;
	for (p += klen + 2; *p && *p != '"' && k + 1 < len; p++) {
		if (*p == '\\' && p[1])
			p++;
		buf[k++] = isprint((unsigned char)*p) ? *p : '?';
	}
	buf[k] = 0;
}

static const char *size_str(double v, char *buf, size_t len)
{
	return fmt_size(u(v), buf, len);
}

/* ---- sections ---- */

static void print_requests(const struct samples *ss)
{
	printf("Requests");
	for (size_t r = 0; r < ARRAY_SIZE(results); r++)
		printf("\t%s", results[r]);
	printf("\n");
	for (size_t c = 0; c < ARRAY_SIZE(classes); c++) {
		printf("%s", classes[c]);
		for (size_t r = 0; r < ARRAY_SIZE(results); r++)
			printf("\t%" PRIu64, u(lval(ss,
			       "kelpie_requests_total",
			       "class=\"%s\",result=\"%s\"", classes[c],
			       results[r])));
		printf("\n");
	}
}

static void put_duration(double secs)
{
	if (isnan(secs))
		printf("\t-");
	else if (isinf(secs))
		printf("\t>10s");
	else if (secs < 1e-3)
		printf("\t%.3gus", secs * 1e6);
	else if (secs < 1)
		printf("\t%.3gms", secs * 1e3);
	else
		printf("\t%.3gs", secs);
}

/* the upper bound of the bucket that holds quantile @q of @cls */
static double quantile(const struct samples *ss, const char *cls, double q,
		       double count)
{
	static const char name[] = "kelpie_request_duration_seconds_bucket";
	char prefix[64], le[32];
	double best = NAN;

	snprintf(prefix, sizeof(prefix), "class=\"%s\",", cls);
	for (size_t i = 0; i < ss->n; i++) {
		const struct sample *s = &ss->s[i];
		double bound;

		if (strcmp(s->name, name) ||
		    strncmp(s->labels, prefix, strlen(prefix)) ||
		    s->value < q * count)
			continue;
		label_value(s->labels, "le", le, sizeof(le));
		bound = strcmp(le, "+Inf") ? strtod(le, NULL) : INFINITY;
		if (isnan(best) || bound < best)
			best = bound;
	}
	return best;
}

static void print_latency(const struct samples *ss)
{
	printf("Latency\tcount\tp50\tp90\tp99\tmean\n");
	for (size_t c = 0; c < ARRAY_SIZE(classes); c++) {
		double n = lval(ss, "kelpie_request_duration_seconds_count",
				"class=\"%s\"", classes[c]);
		double sum = lval(ss, "kelpie_request_duration_seconds_sum",
				  "class=\"%s\"", classes[c]);

		printf("%s\t%" PRIu64, classes[c], u(n));
		if (isnan(n) || n < 1) {
			printf("\t-\t-\t-\t-\n");
			continue;
		}
		put_duration(quantile(ss, classes[c], 0.50, n));
		put_duration(quantile(ss, classes[c], 0.90, n));
		put_duration(quantile(ss, classes[c], 0.99, n));
		put_duration(sum / n);
		printf("\n");
	}
	printf("(percentiles are bucket bounds: at most this long)\n");
}

static void print_pair(const struct samples *ss, const char *title,
		       const char *name, const char *key, bool size)
{
	char a[32], b[32];
	double c = lval(ss, name, "%s=\"client\"", key);
	double p = lval(ss, name, "%s=\"peer\"", key);

	if (size)
		printf("%s\tclient %s, peer %s\n", title,
		       size_str(c, a, sizeof(a)), size_str(p, b, sizeof(b)));
	else
		printf("%s\tclient %" PRIu64 ", peer %" PRIu64 "\n", title,
		       u(c), u(p));
}

static void print_traffic(const struct samples *ss)
{
	char a[32], b[32];

	print_pair(ss, "In flight", "kelpie_requests_in_flight", "side",
		   false);
	print_pair(ss, "Received", "kelpie_received_bytes_total", "side",
		   true);
	print_pair(ss, "Sent", "kelpie_sent_bytes_total", "side", true);
	printf("Errors\tnetwork %" PRIu64 ", disk_io %" PRIu64
	       ", no_space %" PRIu64 ", checksum %" PRIu64 "\n",
	       u(val(ss, "kelpie_errors_total", "kind=\"network\"")),
	       u(val(ss, "kelpie_errors_total", "kind=\"disk_io\"")),
	       u(val(ss, "kelpie_errors_total", "kind=\"no_space\"")),
	       u(val(ss, "kelpie_errors_total", "kind=\"checksum\"")));
	printf("Budget\t%s used of %s\n",
	       size_str(val(ss, "kelpie_budget_used_bytes", ""), a, sizeof(a)),
	       size_str(val(ss, "kelpie_budget_limit_bytes", ""), b,
			sizeof(b)));
	printf("I/O queue\t%" PRIu64 " of %" PRIu64 "; served on the loop: "
	       "reads %" PRIu64 ", writes %" PRIu64 "\n",
	       u(val(ss, "kelpie_io_queue_depth", "")),
	       u(val(ss, "kelpie_io_queue_capacity", "")),
	       u(val(ss, "kelpie_reads_on_loop_total", "")),
	       u(val(ss, "kelpie_writes_on_loop_total", "")));
	printf("Connections\t%" PRIu64 ", NBD %" PRIu64 "\n",
	       u(val(ss, "kelpie_client_connections", "")),
	       u(val(ss, "kelpie_nbd_connections", "")));
}

static const char *cluster_status(const struct samples *ss)
{
	static const char *const st[] = { "ok", "waiting", "shutdown",
					  "killed" };

	for (size_t i = 0; i < ARRAY_SIZE(st); i++)
		if (lval(ss, "kelpie_cluster_status", "status=\"%s\"", st[i])
		    == 1)
			return st[i];
	return "unknown";
}

static void print_cluster(const struct samples *ss)
{
	printf("Cluster\tepoch %" PRIu64 ", %" PRIu64 " nodes, status %s, %s\n",
	       u(val(ss, "kelpie_cluster_epoch", "")),
	       u(val(ss, "kelpie_cluster_nodes", "")), cluster_status(ss),
	       val(ss, "kelpie_node_joined", "") == 1 ? "member" :
	       "not a member");
	if (val(ss, "kelpie_recovery_running", "") == 1)
		printf("Recovery\trunning, %" PRIu64 " of %" PRIu64
		       " objects checked\n",
		       u(val(ss, "kelpie_recovery_objects_done", "")),
		       u(val(ss, "kelpie_recovery_objects", "")));
	else if (val(ss, "kelpie_recovery_halted", "") == 1)
		printf("Recovery\thalted\n");
	else
		printf("Recovery\tnot running; last: epoch %" PRIu64 ", %"
		       PRIu64 " objects\n",
		       u(val(ss, "kelpie_recovery_last_epoch", "")),
		       u(val(ss, "kelpie_recovery_objects", "")));
	printf("VDIs\t%" PRIu64 ", %" PRIu64 " locked\n",
	       u(val(ss, "kelpie_vdis", "")),
	       u(val(ss, "kelpie_vdi_locks", "")));
}

/* the store series, one block per path the sheep reports */
static void print_store(const struct samples *ss)
{
	static const char *const kinds[] = { "data", "inode", "attr",
					     "ledger" };
	char path[256], a[32], b[32], c[32];

	for (size_t i = 0; i < ss->n; i++) {
		const struct sample *s = &ss->s[i];
		double size, freeb;

		if (strcmp(s->name, "kelpie_store_size_bytes"))
			continue;
		label_value(s->labels, "path", path, sizeof(path));
		size = s->value;
		freeb = lval(ss, "kelpie_store_free_bytes", "%s", s->labels);
		printf("Store\t%s: size %s, used %s, free %s\n", path,
		       size_str(size, a, sizeof(a)),
		       size_str(size - freeb, b, sizeof(b)),
		       size_str(freeb, c, sizeof(c)));
		if (isnan(lval(ss, "kelpie_objects", "%s,kind=\"data\"",
			       s->labels)))
			continue;
		printf("Objects");
		for (size_t k = 0; k < ARRAY_SIZE(kinds); k++)
			printf("%s%s %" PRIu64, k ? ", " : "\t", kinds[k],
			       u(lval(ss, "kelpie_objects", "%s,kind=\"%s\"",
				      s->labels, kinds[k])));
		printf("\n");
	}
	if (isnan(val(ss, "kelpie_stale_objects", "")))
		return;
	printf("Stale copies\t%" PRIu64 " (%s)\n",
	       u(val(ss, "kelpie_stale_objects", "")),
	       size_str(val(ss, "kelpie_stale_bytes", ""), a, sizeof(a)));
	printf("Checksums\tmismatches %" PRIu64 ", healed %" PRIu64
	       ", not healed %" PRIu64 "\n",
	       u(val(ss, "kelpie_checksum_detected_total", "")),
	       u(val(ss, "kelpie_heals_total", "result=\"repaired\"")),
	       u(val(ss, "kelpie_heals_total", "result=\"failed\"")));
	printf("Scrub\t%s; listed %" PRIu64 ", scanned %" PRIu64
	       ", damaged %" PRIu64 ", repaired %" PRIu64 ", unrepaired %"
	       PRIu64 "\n",
	       val(ss, "kelpie_scrub_running", "") == 1 ? "running" :
	       "not running",
	       u(val(ss, "kelpie_scrub_objects", "state=\"listed\"")),
	       u(val(ss, "kelpie_scrub_objects", "state=\"scanned\"")),
	       u(val(ss, "kelpie_scrub_objects", "state=\"damaged\"")),
	       u(val(ss, "kelpie_scrub_objects", "state=\"repaired\"")),
	       u(val(ss, "kelpie_scrub_objects", "state=\"unrepaired\"")));
}

static void print_vdis(const struct samples *ss)
{
	static const char ops[] = "kelpie_vdi_operations_total";
	static const char bytes[] = "kelpie_vdi_bytes_total";
	char vid[32], op[16], a[32], b[32];
	bool header = false;

	for (size_t i = 0; i < ss->n; i++) {
		const struct sample *s = &ss->s[i];

		if (strcmp(s->name, ops))
			continue;
		label_value(s->labels, "op", op, sizeof(op));
		if (strcmp(op, "read"))
			continue;
		label_value(s->labels, "vid", vid, sizeof(vid));
		if (!header) {
			printf("Busiest VDIs\treads\twrites\tread\twritten\n");
			header = true;
		}
		printf("%s\t%" PRIu64 "\t%" PRIu64 "\t%s\t%s\n", vid,
		       u(s->value),
		       u(lval(ss, ops, "vid=\"%s\",op=\"write\"", vid)),
		       size_str(lval(ss, bytes, "vid=\"%s\",op=\"read\"",
				     vid), a, sizeof(a)),
		       size_str(lval(ss, bytes, "vid=\"%s\",op=\"write\"",
				     vid), b, sizeof(b)));
	}
}

/* the samples without comments, as sent */
static void print_raw(const char *text)
{
	const char *p = text, *nl;

	for (; *p; p = nl ? nl + 1 : p + strlen(p)) {
		nl = strchr(p, '\n');
		if (*p == '#' || p == nl)
			continue;
		for (const char *c = p; c < (nl ? nl : p + strlen(p)); c++)
			putchar(isprint((unsigned char)*c) ? *c : '?');
		putchar('\n');
	}
}

static void print_human(char *text)
{
	struct samples ss;

	if (parse_samples(text, &ss)) {
		fprintf(stderr, "out of memory\n");
		return;
	}
	print_requests(&ss);
	printf("\n");
	print_latency(&ss);
	printf("\n");
	print_traffic(&ss);
	print_cluster(&ss);
	print_store(&ss);
	printf("\n");
	print_vdis(&ss);
	free(ss.s);
}

int node_stat_metrics(void)
{
	struct sd_req req;
	struct sd_rsp rsp;
	void *data;
	char *text;

	sd_init_req(&req, SD_OP_GET_METRICS);
	req.data_length = METRICS_TEXT_MAX;
	if (dog_exec_alloc(&req, METRICS_TEXT_MAX, &data, &rsp)) {
		free(data);
		return EXIT_SYSFAIL;
	}
	if (rsp.result != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to get the metrics: %s\n",
			sd_strerror(rsp.result));
		free(data);
		return EXIT_FAILURE;
	}
	/* a copy with a terminating NUL: the reply has none */
	text = calloc(1, (size_t)rsp.data_length + 1);
	if (!text) {
		free(data);
		return EXIT_SYSFAIL;
	}
	if (data)
		memcpy(text, data, rsp.data_length);
	free(data);
	if (raw_output)
		print_raw(text);
	else
		print_human(text);
	free(text);
	return EXIT_SUCCESS;
}
