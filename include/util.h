/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef KELPIE_UTIL_H
#define KELPIE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "internal_proto.h"

#define KELPIE_VERSION "0.1.0"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))

/* logging: levels follow syslog (0 emerg ... 7 debug) */
enum { LOG_L_EMERG, LOG_L_ALERT, LOG_L_CRIT, LOG_L_ERR, LOG_L_WARNING,
	LOG_L_NOTICE, LOG_L_INFO, LOG_L_DEBUG };

/* log.c: where lines go (-l dst=) and how they look (-l format=) */
enum log_dst { LOG_DST_FILE, LOG_DST_STDOUT, LOG_DST_SYSLOG };
enum log_fmt { LOG_FMT_DEFAULT, LOG_FMT_JSON };

int log_setup(enum log_dst dst, enum log_fmt fmt, const char *path,
	      int level, bool to_stderr);
/* log_setup() to the file @path, plain lines */
int log_open(const char *path, int level, bool to_stderr);
/* open the log file again by its name (SIGHUP, after logrotate) */
int log_reopen(void);
/* until the daemon serves, errors also go to @fd (-1: no more) */
void log_set_startup_fd(int fd);
/* a level by syslog name ("debug", "warning", also "error", "warn") or
 * number 0-7; -1 if neither */
int log_level_parse(const char *s);
const char *log_level_word(int level);
void log_set_level(int level);
int log_get_level(void);
void log_write(int level, const char *func, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define sd_emerg(fmt, ...) log_write(LOG_L_EMERG, __func__, __LINE__, fmt, ##__VA_ARGS__)
#define sd_err(fmt, ...) log_write(LOG_L_ERR, __func__, __LINE__, fmt, ##__VA_ARGS__)
#define sd_warn(fmt, ...) log_write(LOG_L_WARNING, __func__, __LINE__, fmt, ##__VA_ARGS__)
#define sd_notice(fmt, ...) log_write(LOG_L_NOTICE, __func__, __LINE__, fmt, ##__VA_ARGS__)
#define sd_info(fmt, ...) log_write(LOG_L_INFO, __func__, __LINE__, fmt, ##__VA_ARGS__)
#define sd_debug(fmt, ...) log_write(LOG_L_DEBUG, __func__, __LINE__, fmt, ##__VA_ARGS__)

/*
 * At most one line per @ll a interval (LOG_LIMIT_MS) for a cause that a
 * peer or a client can repeat at will (a refused connection, accept
 * failing for want of descriptors): the line says how many were left out
 * since the last one.  @ll is a static struct log_limit of the caller.
 */
#define LOG_LIMIT_MS	10000
struct log_limit {
	uint64_t next_ms;
	unsigned int skipped;
};
/* may a line be logged now?  *@skipped: how many were not since */
bool log_limit_pass(struct log_limit *ll, unsigned int *skipped);
#define sd_warn_limited(ll, fmt, ...)					\
	do {								\
		unsigned int skipped_;					\
		if (!log_limit_pass(ll, &skipped_))			\
			break;						\
		if (skipped_)						\
			sd_warn(fmt " (and %u more like it, not logged)",	\
				##__VA_ARGS__, skipped_);		\
		else							\
			sd_warn(fmt, ##__VA_ARGS__);			\
	} while (0)

/*
 * An invariant: when @cond is false, log it with where it was stated and
 * a backtrace, then abort (lib/assert.c).  On in every build; @cond is
 * evaluated once and must have no effect the program relies on.
 */
#define sd_assert(cond)							\
	do {								\
		if (__builtin_expect(!(cond), 0))			\
			sd_assert_fail(#cond, __FILE__, __LINE__, __func__); \
	} while (0)
void sd_assert_fail(const char *cond, const char *file, int line,
		    const char *func) __attribute__((noreturn, cold));

/*
 * A decimal number of digits only (no sign, no space) from 0 to @max into
 * *@out: 0, or -1 when it is not one or is out of range (nothing wraps)
 */
int parse_u64_range(const char *s, uint64_t max, uint64_t *out);

/* allocation that aborts the process rather than returning NULL */
void *xmalloc(size_t size);
void *xzalloc(size_t size);
void *xrealloc(void *p, size_t size);
/* aligned to 4 KiB (O_DIRECT); free() frees it */
void *xmalloc_pages(size_t size);
char *xstrdup(const char *s);

/* full reads and writes on blocking descriptors; -1 on error or EOF */
ssize_t xread(int fd, void *buf, size_t count);
ssize_t xwrite(int fd, const void *buf, size_t count);
ssize_t xpread(int fd, void *buf, size_t count, off_t off);
ssize_t xpwrite(int fd, const void *buf, size_t count, off_t off);

/*
 * Parse a size: decimal number (fractions allowed) with an optional suffix
 * B/K/M/G/T/P (powers of 1024).  Returns 0 or -1.
 */
int parse_size(const char *s, uint64_t *out);
/* dog's human size format (dog.md §1.3) into @buf */
char *size_to_str(uint64_t size, char *buf, size_t len);

/* "127.0.0.1" or an IPv6 text form of a node_id address */
char *addr_to_str(const uint8_t addr[16], char *buf, size_t len);
int str_to_addr(const char *s, uint8_t addr[16]);
char *node_to_str(const struct sd_node *n, char *buf, size_t len);

/* objects.md §5: (sec << 32) | (usec * 1000) */
uint64_t sd_time_now(void);
/* the monotonic clock */
uint64_t now_msec(void);
uint64_t now_nsec(void);

bool is_zero(const void *buf, size_t len);
int mkdir_p(const char *path);
int rmdir_r(const char *path);

#endif
