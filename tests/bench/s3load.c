// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * s3load: S3 requests at a fixed concurrency, the load of tests/bench/s3.
 * The same client for every system measured: libcurl's multi interface
 * (one connection per slot, kept alive) and its SigV4 signing, so that
 * the client costs little beside the servers.
 *
 *   s3load URL ACCESS SECRET BUCKET OP SIZE CONC SECS|xCOUNT [KEYS]
 *
 * OP: mkbucket; put (objects bench/NNNNNNNN of SIZE bytes, numbered from
 * 0); get (reads of objects 0 to KEYS-1 in turn, each checked: SIZE bytes
 * and the bytes put); del (objects 0 to KEYS-1); list (ListObjectsV2
 * under bench/ in pages of 1,000 to the end, again and again; SIZE is
 * ignored).  SECS: new requests are started for that many seconds (those
 * in flight then are finished); xCOUNT: COUNT requests in all.
 *
 * Prints one line: "ops N secs S ops_s X mb_s Y p50_ms P p99_ms Q errors
 * E keys K" (K: keys a list pass found); exits 1 if any request failed
 * (the first failure said on stderr).
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CONC	256
#define KEY_FMT		"bench/%08" PRIu64

struct slot {
	CURL *h;
	uint64_t idx;		/* the object */
	double start;
	uint64_t pos;		/* bytes sent or received */
	bool bad;		/* a GET's bytes differ */
	char *page;		/* a listing's answer */
	size_t page_len;
};

static const char *url, *bucket, *op;
static char userpwd[512];
static uint64_t size, keys, next_idx, list_found, list_pass;
static uint8_t *data;
static char list_after[64];
static double *lat;
static size_t nr_lat, cap_lat;
static int errors;
static struct curl_slist *hdrs;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t body_out(char *buf, size_t sz, size_t n, void *arg)
{
	struct slot *s = arg;
	size_t len = sz * n;

	len = len < size - s->pos ? len : size - s->pos;
	memcpy(buf, data + s->pos, len);
	s->pos += len;
	return len;
}

static size_t body_in(char *buf, size_t sz, size_t n, void *arg)
{
	struct slot *s = arg;
	size_t len = sz * n;

	/* a listing whole; of the rest, what an error would say */
	if (!strcmp(op, "list") || s->page_len < 2048) {
		size_t keep = strcmp(op, "list") ? 2048 - s->page_len : len;

		keep = keep < len ? keep : len;
		s->page = realloc(s->page, s->page_len + keep + 1);
		memcpy(s->page + s->page_len, buf, keep);
		s->page_len += keep;
		s->page[s->page_len] = 0;
	}
	if (!strcmp(op, "get") &&
	    (s->pos + len > size || memcmp(buf, data + s->pos, len)))
		s->bad = true;
	s->pos += len;
	return len;
}

/* the next request of @s set up */
static void start(struct slot *s)
{
	char u[1024], key[64];

	s->pos = 0;
	s->bad = false;
	s->page_len = 0;
	s->idx = next_idx++;
	curl_easy_reset(s->h);
	curl_easy_setopt(s->h, CURLOPT_USERPWD, userpwd);
	curl_easy_setopt(s->h, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
	curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, body_in);
	curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
	snprintf(key, sizeof(key), KEY_FMT, keys ? s->idx % keys : s->idx);
	if (!strcmp(op, "mkbucket")) {
		snprintf(u, sizeof(u), "%s/%s", url, bucket);
		curl_easy_setopt(s->h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(s->h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)0);
		curl_easy_setopt(s->h, CURLOPT_READFUNCTION, body_out);
		curl_easy_setopt(s->h, CURLOPT_READDATA, s);
	} else if (!strcmp(op, "list")) {
		/* start-after, not a token: the query stays plain to sign */
		snprintf(u, sizeof(u), "%s/%s?list-type=2&max-keys=1000&"
			 "prefix=bench%%2F%s%s", url, bucket,
			 list_after[0] ? "&start-after=" : "", list_after);
	} else {
		snprintf(u, sizeof(u), "%s/%s/%s", url, bucket, key);
	}
	if (!strcmp(op, "put")) {
		curl_easy_setopt(s->h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(s->h, CURLOPT_INFILESIZE_LARGE,
				 (curl_off_t)size);
		curl_easy_setopt(s->h, CURLOPT_READFUNCTION, body_out);
		curl_easy_setopt(s->h, CURLOPT_READDATA, s);
	} else if (!strcmp(op, "del")) {
		curl_easy_setopt(s->h, CURLOPT_CUSTOMREQUEST, "DELETE");
	}
	/* S3 wants it; curl then signs it as the payload's hash */
	curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(s->h, CURLOPT_URL, u);
	s->start = now();
}

/* a listing page: where the next starts ("" at the end), keys counted */
static void list_page(struct slot *s)
{
	const char *p = s->page ? s->page : "", *last = NULL, *k;

	for (k = strstr(p, "<Key>"); k; k = strstr(k + 5, "<Key>")) {
		list_found++;
		last = k + 5;
	}
	if (!strstr(p, "<IsTruncated>true</IsTruncated>") || !last) {
		list_after[0] = 0;
		list_pass++;
		return;
	}
	/* our keys are bench/NNNNNNNN: the slash goes encoded */
	snprintf(list_after, sizeof(list_after), "bench%%2F%.8s", last + 6);
}

static void done(struct slot *s, CURLcode rc)
{
	long code = 0;
	bool ok;

	curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
	ok = rc == CURLE_OK && (code == 200 || code == 204) && !s->bad &&
	     (strcmp(op, "get") || s->pos == size);
	if (!ok && !errors++)
		fprintf(stderr, "s3load: %s of %" PRIu64 ": curl %d, HTTP %ld%s"
			" %.300s\n", op, s->idx, rc, code,
			s->bad ? ", other bytes" : "",
			s->page && (s->bad || code != 200) ? s->page : "");
	if (!strcmp(op, "list"))
		list_page(s);
	if (nr_lat == cap_lat) {
		cap_lat = cap_lat ? 2 * cap_lat : 4096;
		lat = realloc(lat, cap_lat * sizeof(*lat));
	}
	lat[nr_lat++] = now() - s->start;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct slot slots[MAX_CONC] = { 0 };
	uint64_t count = UINT64_MAX, xfer = 0;
	double secs = 0, t0, t1;
	int conc, running = 0;
	CURLM *m;

	if (argc < 9 || argc > 10) {
		fprintf(stderr, "usage: s3load URL ACCESS SECRET BUCKET OP SIZE "
			"CONC SECS|xCOUNT [KEYS]\n");
		return 2;
	}
	url = argv[1];
	snprintf(userpwd, sizeof(userpwd), "%s:%s", argv[2], argv[3]);
	bucket = argv[4];
	op = argv[5];
	size = strtoull(argv[6], NULL, 0);
	conc = atoi(argv[7]);
	if (argv[8][0] == 'x')
		count = strtoull(argv[8] + 1, NULL, 0);
	else
		secs = atof(argv[8]);
	keys = argc == 10 ? strtoull(argv[9], NULL, 0) : 0;
	if (conc < 1 || conc > MAX_CONC || (!strcmp(op, "get") && !keys)) {
		fprintf(stderr, "s3load: CONC 1-%d; get needs KEYS\n", MAX_CONC);
		return 2;
	}
	if (!strcmp(op, "mkbucket") || !strcmp(op, "list"))
		size = 0;
	data = malloc(size ? size : 1);
	srandom(1);	/* every run puts and expects the same bytes */
	for (uint64_t i = 0; i < size; i++)
		data[i] = (uint8_t)random();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	m = curl_multi_init();
	hdrs = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	t0 = now();
	for (int i = 0; i < conc && next_idx < count; i++) {
		slots[i].h = curl_easy_init();
		start(&slots[i]);
		curl_multi_add_handle(m, slots[i].h);
		running++;
	}
	while (running) {
		CURLMsg *msg;
		int left, still;

		curl_multi_perform(m, &still);
		while ((msg = curl_multi_info_read(m, &left))) {
			struct slot *s;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
					  (char **)&s);
			done(s, msg->data.result);
			xfer += s->pos;
			curl_multi_remove_handle(m, s->h);
			running--;
			if (next_idx < count && (!secs || now() - t0 < secs) &&
			    errors < 10) {
				start(s);
				curl_multi_add_handle(m, s->h);
				running++;
			}
		}
		if (running)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	t1 = now();
	qsort(lat, nr_lat, sizeof(*lat), cmp_double);
	printf("ops %zu secs %.3f ops_s %.1f mb_s %.2f p50_ms %.3f p99_ms "
	       "%.3f errors %d keys %" PRIu64 "\n", nr_lat, t1 - t0,
	       nr_lat / (t1 - t0), xfer / (t1 - t0) / 1e6,
	       nr_lat ? lat[nr_lat / 2] * 1e3 : 0,
	       nr_lat ? lat[(size_t)(nr_lat * 0.99)] * 1e3 : 0, errors,
	       list_pass ? list_found / list_pass : list_found);
	for (int i = 0; i < conc; i++) {
		if (slots[i].h)
			curl_easy_cleanup(slots[i].h);
		free(slots[i].page);
	}
	curl_multi_cleanup(m);
	curl_slist_free_all(hdrs);
	curl_global_cleanup();
	free(lat);
	free(data);
	return errors ? 1 : 0;
}
