// SPDX-License-Identifier: GPL-2.0-or-later
#include <inttypes.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include "util.h"

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p) {
		sd_emerg("out of memory allocating %zu bytes", size);
		abort();
	}
	return p;
}

/* calloc: large blocks come zeroed from mmap, no pass over them */
void *xzalloc(size_t size)
{
	void *p = calloc(1, size ? size : 1);

	if (!p) {
		sd_emerg("out of memory allocating %zu bytes", size);
		abort();
	}
	return p;
}

/*
 * Page-aligned, for payloads that may go to an O_DIRECT file as they are
 * (store -D); freed with free()
 */
void *xmalloc_pages(size_t size)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, size ? size : 1)) {
		sd_emerg("out of memory allocating %zu bytes", size);
		abort();
	}
	return p;
}

void *xrealloc(void *old, size_t size)
{
	void *p = realloc(old, size ? size : 1);

	if (!p) {
		sd_emerg("out of memory reallocating %zu bytes", size);
		abort();
	}
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		abort();
	return p;
}

ssize_t xread(int fd, void *buf, size_t count)
{
	size_t done = 0;

	while (done < count) {
		ssize_t r = read(fd, (char *)buf + done, count - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			/* no progress and no error: errno is stale */
			errno = EIO;
			return -1;
		}
		done += (size_t)r;
	}
	return (ssize_t)done;
}

ssize_t xwrite(int fd, const void *buf, size_t count)
{
	size_t done = 0;

	while (done < count) {
		ssize_t r = write(fd, (const char *)buf + done, count - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			/* no progress and no error: errno is stale */
			errno = EIO;
			return -1;
		}
		done += (size_t)r;
	}
	return (ssize_t)done;
}

ssize_t xpread(int fd, void *buf, size_t count, off_t off)
{
	size_t done = 0;

	while (done < count) {
		ssize_t r = pread(fd, (char *)buf + done, count - done,
				  off + (off_t)done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

ssize_t xpwrite(int fd, const void *buf, size_t count, off_t off)
{
	size_t done = 0;

	while (done < count) {
		ssize_t r = pwrite(fd, (const char *)buf + done, count - done,
				   off + (off_t)done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			/* no progress and no error: errno is stale */
			errno = EIO;
			return -1;
		}
		done += (size_t)r;
	}
	return (ssize_t)done;
}

int parse_u64_range(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v;
	int shift = 0;

	if (!s || !*s || !(*s >= '0' && *s <= '9'))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	if (*end) {
		switch (*end) {
		case 'B': case 'b': shift = 0; break;
		case 'K': case 'k': shift = 10; break;
		case 'M': case 'm': shift = 20; break;
		case 'G': case 'g': shift = 30; break;
		case 'T': case 't': shift = 40; break;
		case 'P': case 'p': shift = 50; break;
		default: return -1;
		}
		if (end[1])
			return -1;
	}
	v = ldexp(v, shift);
	if (v >= 18446744073709551615.0)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

char *size_to_str(uint64_t size, char *buf, size_t len)
{
	static const char *const units[] = {
		"MB", "GB", "TB", "PB", "EB", "ZB", "YB",
	};
	double v = (double)size / (1 << 20);
	size_t u = 0;

	/* under a megabyte (a size given in bytes): bytes, not "0.0 MB" */
	if (size && size < (1 << 20) / 20) {
		snprintf(buf, len, "%" PRIu64 " B", size);
		return buf;
	}

	while (v >= 1024 && u < ARRAY_SIZE(units) - 1) {
		v /= 1024;
		u++;
	}
	if (v >= 10)
		snprintf(buf, len, "%.0f %s", v, units[u]);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

char *addr_to_str(const uint8_t addr[16], char *buf, size_t len)
{
	static const uint8_t zero[12];

	if (!memcmp(addr, zero, 12) && addr[12])
		inet_ntop(AF_INET, addr + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, addr, buf, (socklen_t)len);
	return buf;
}

int str_to_addr(const char *s, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, s, addr + 12) == 1)
		return 0;
	if (inet_pton(AF_INET6, s, addr) == 1)
		return 0;
	return -1;
}

char *node_to_str(const struct sd_node *n, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	snprintf(buf, len, "%s:%u", addr_to_str(n->nid.addr, a, sizeof(a)),
		 n->nid.port);
	return buf;
}

uint64_t sd_time_now(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec << 32 | (uint64_t)tv.tv_usec * 1000;
}

uint64_t now_msec(void)
{
	return now_nsec() / 1000000;
}

uint64_t now_nsec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

bool is_zero(const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

int mkdir_p(const char *path)
{
	char tmp[4096];
	size_t len = strlen(path);

	if (len >= sizeof(tmp))
		return -1;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return -1;
	return 0;
}

int rmdir_r(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char p[4096];
	int ret = 0;

	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
		if (lstat(p, &st))
			continue;
		if (S_ISDIR(st.st_mode))
			ret |= rmdir_r(p);
		else if (unlink(p))
			ret = -1;
	}
	closedir(d);
	if (rmdir(path))
		ret = -1;
	return ret;
}
